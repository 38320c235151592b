//! cty types and their JSON form, as used in `Schema.Attribute.type`.

use std::collections::BTreeMap;

use serde_json::json;

/// The cty types a provider schema can use. `dynamic` and tuples are left out: nothing in
/// this provider needs them, and decoding them wrongly would be worse than refusing them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Type {
    Bool,
    Number,
    String,
    List(Box<Type>),
    Set(Box<Type>),
    Map(Box<Type>),
    Object(BTreeMap<String, Type>),
}

impl Type {
    pub fn list(element: Type) -> Self {
        Type::List(Box::new(element))
    }

    pub fn set(element: Type) -> Self {
        Type::Set(Box::new(element))
    }

    pub fn map(element: Type) -> Self {
        Type::Map(Box::new(element))
    }

    pub fn object<K: Into<String>>(attrs: impl IntoIterator<Item = (K, Type)>) -> Self {
        Type::Object(attrs.into_iter().map(|(k, t)| (k.into(), t)).collect())
    }

    /// The compact JSON Terraform expects in `Attribute.type`: `"string"` with its
    /// quotes, `["list","string"]`, `["object",{"a":"bool"}]`.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Type::Bool => json!("bool"),
            Type::Number => json!("number"),
            Type::String => json!("string"),
            Type::List(e) => json!(["list", e.to_json()]),
            Type::Set(e) => json!(["set", e.to_json()]),
            Type::Map(e) => json!(["map", e.to_json()]),
            Type::Object(attrs) => {
                let attrs: serde_json::Map<_, _> = attrs
                    .iter()
                    .map(|(k, t)| (k.clone(), t.to_json()))
                    .collect();
                json!(["object", attrs])
            }
        }
    }

    pub fn to_json_bytes(&self) -> Vec<u8> {
        self.to_json().to_string().into_bytes()
    }

    /// A short name for error messages.
    pub fn friendly_name(&self) -> &'static str {
        match self {
            Type::Bool => "bool",
            Type::Number => "number",
            Type::String => "string",
            Type::List(_) => "list",
            Type::Set(_) => "set",
            Type::Map(_) => "map",
            Type::Object(_) => "object",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitive_types_are_quoted_json_strings() {
        // A bare `string` (no quotes) makes Terraform reject the whole schema.
        assert_eq!(Type::String.to_json_bytes(), b"\"string\"");
        assert_eq!(Type::Bool.to_json_bytes(), b"\"bool\"");
    }

    #[test]
    fn collection_and_object_types_use_ctys_array_form() {
        assert_eq!(
            Type::list(Type::String).to_json_bytes(),
            br#"["list","string"]"#
        );
        assert_eq!(
            Type::map(Type::Number).to_json_bytes(),
            br#"["map","number"]"#
        );
        let obj = Type::object([("b", Type::Bool), ("a", Type::set(Type::String))]);
        assert_eq!(
            obj.to_json_bytes(),
            br#"["object",{"a":["set","string"],"b":"bool"}]"#
        );
    }
}
