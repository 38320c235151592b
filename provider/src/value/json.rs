//! State JSON → [`Value`], for `UpgradeResourceState`.
//!
//! Terraform hands back the state it stored as JSON and expects msgpack of the *current*
//! schema. So, unlike msgpack decoding, attributes the schema no longer has are dropped
//! instead of rejected, and attributes it gained come back as null.

use std::collections::BTreeMap;

use serde_json::Value as Js;

use super::{Number, Type, Value, ValueError, child_path, index_path};

pub fn from_json(bytes: &[u8], ty: &Type) -> Result<Value, ValueError> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    let raw: Js = serde_json::from_slice(bytes).map_err(|e| ValueError::Json(e.to_string()))?;
    decode(raw, ty, "")
}

fn kind(raw: &Js) -> &'static str {
    match raw {
        Js::Null => "null",
        Js::Bool(_) => "bool",
        Js::Number(_) => "number",
        Js::String(_) => "string",
        Js::Array(_) => "array",
        Js::Object(_) => "object",
    }
}

fn decode(raw: Js, ty: &Type, path: &str) -> Result<Value, ValueError> {
    match (raw, ty) {
        (Js::Null, _) => Ok(Value::Null),
        (Js::Bool(b), Type::Bool) => Ok(Value::Bool(b)),
        (Js::Number(n), Type::Number) => Ok(Value::Number(match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Number::Int(i),
            (None, Some(f)) if n.is_f64() => Number::Float(f),
            _ => Number::Decimal(n.to_string()),
        })),
        // cty writes big numbers as JSON strings.
        (Js::String(s), Type::Number) if s.parse::<f64>().is_ok() => {
            Ok(Value::Number(Number::Decimal(s)))
        }
        (Js::String(s), Type::String) => Ok(Value::String(s)),
        (Js::Array(items), Type::List(e) | Type::Set(e)) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| decode(item, e, &index_path(path, i)))
            .collect::<Result<_, _>>()
            .map(Value::List),
        (Js::Object(m), Type::Map(e)) => m
            .into_iter()
            .map(|(k, v)| {
                let item = decode(v, e, &index_path(path, &k))?;
                Ok((k, item))
            })
            .collect::<Result<BTreeMap<_, _>, _>>()
            .map(Value::Map),
        (Js::Object(mut m), Type::Object(attrs)) => attrs
            .iter()
            .map(|(name, attr_ty)| {
                let v = m.remove(name).unwrap_or(Js::Null);
                Ok((name.clone(), decode(v, attr_ty, &child_path(path, name))?))
            })
            .collect::<Result<BTreeMap<_, _>, _>>()
            .map(Value::Object),
        (raw, ty) => Err(ValueError::mismatch(path, ty.friendly_name(), kind(&raw))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ty() -> Type {
        Type::object([
            ("name", Type::String),
            ("replicas", Type::Number),
            ("timeouts", Type::object([("create", Type::String)])),
        ])
    }

    #[test]
    fn drops_removed_attributes_and_nulls_new_ones() {
        // State written by an older schema that had `legacy` and lacked `timeouts`.
        let v = from_json(br#"{"name":"a","replicas":3,"legacy":true}"#, &ty()).unwrap();
        assert_eq!(
            v,
            Value::object([
                ("name", Value::string("a")),
                ("replicas", Value::Number(Number::Int(3))),
                ("timeouts", Value::Null),
            ])
        );
    }

    #[test]
    fn nested_objects_and_numbers_keep_their_form() {
        let v = from_json(
            br#"{"name":null,"replicas":1.5,"timeouts":{"create":"10m"}}"#,
            &ty(),
        )
        .unwrap();
        assert_eq!(v.get("replicas"), &Value::Number(Number::Float(1.5)));
        assert_eq!(v.get("timeouts").get("create").as_str(), Some("10m"));
        assert!(v.get("name").is_null());
    }

    #[test]
    fn wrong_type_names_the_path() {
        let err = from_json(br#"{"timeouts":{"create":5}}"#, &ty()).unwrap_err();
        assert_eq!(
            err,
            ValueError::TypeMismatch {
                path: "timeouts.create".into(),
                expected: "string".into(),
                found: "number".into()
            }
        );
    }

    #[test]
    fn empty_state_is_null() {
        assert_eq!(from_json(b"", &ty()).unwrap(), Value::Null);
        assert_eq!(from_json(b"null", &ty()).unwrap(), Value::Null);
    }
}
