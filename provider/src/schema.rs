//! Schema descriptions: what a resource's attributes and blocks are, once, used both to
//! answer `GetProviderSchema` and to derive the cty type every value is decoded with.
//! Keeping one source means the wire type can never drift from the advertised schema.

use crate::proto::tfplugin6 as tf;
use crate::value::Type;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Required,
    Optional,
    Computed,
    OptionalComputed,
}

#[derive(Debug, Clone)]
pub struct Attribute {
    pub name: &'static str,
    pub ty: Type,
    pub mode: Mode,
    pub sensitive: bool,
    pub description: &'static str,
}

impl Attribute {
    pub fn new(name: &'static str, ty: Type, mode: Mode, description: &'static str) -> Self {
        Self {
            name,
            ty,
            mode,
            sensitive: false,
            description,
        }
    }

    pub fn sensitive(mut self) -> Self {
        self.sensitive = true;
        self
    }
}

/// A nested block, always of nesting mode SINGLE: the `timeouts { }` convention of
/// terraform-plugin-framework (absent is null, not an empty list), and the only one we need.
#[derive(Debug, Clone)]
pub struct NestedBlock {
    pub name: &'static str,
    pub block: Block,
}

#[derive(Debug, Clone, Default)]
pub struct Block {
    pub attributes: Vec<Attribute>,
    pub blocks: Vec<NestedBlock>,
    pub description: &'static str,
}

impl Block {
    /// The object type Terraform uses for values of this block.
    pub fn implied_type(&self) -> Type {
        let attrs = self.attributes.iter().map(|a| (a.name, a.ty.clone()));
        let blocks = self.blocks.iter().map(|b| (b.name, b.block.implied_type()));
        Type::object(attrs.chain(blocks))
    }

    pub fn attribute(&self, name: &str) -> Option<&Attribute> {
        self.attributes.iter().find(|a| a.name == name)
    }

    pub fn to_proto(&self) -> tf::schema::Block {
        tf::schema::Block {
            version: 0,
            attributes: self.attributes.iter().map(attribute_to_proto).collect(),
            block_types: self.blocks.iter().map(nested_to_proto).collect(),
            description: self.description.to_owned(),
            description_kind: tf::StringKind::Markdown as i32,
            deprecated: false,
        }
    }

    pub fn to_schema(&self, version: i64) -> tf::Schema {
        tf::Schema {
            version,
            block: Some(self.to_proto()),
        }
    }
}

fn attribute_to_proto(a: &Attribute) -> tf::schema::Attribute {
    tf::schema::Attribute {
        name: a.name.to_owned(),
        r#type: a.ty.to_json_bytes(),
        nested_type: None,
        description: a.description.to_owned(),
        required: a.mode == Mode::Required,
        optional: matches!(a.mode, Mode::Optional | Mode::OptionalComputed),
        computed: matches!(a.mode, Mode::Computed | Mode::OptionalComputed),
        sensitive: a.sensitive,
        description_kind: tf::StringKind::Markdown as i32,
        deprecated: false,
        // write_only needs Terraform ≥1.11 and OpenTofu does not know it: never set it.
        write_only: false,
    }
}

fn nested_to_proto(b: &NestedBlock) -> tf::schema::NestedBlock {
    tf::schema::NestedBlock {
        type_name: b.name.to_owned(),
        block: Some(b.block.to_proto()),
        nesting: tf::schema::nested_block::NestingMode::Single as i32,
        min_items: 0,
        max_items: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block() -> Block {
        Block {
            attributes: vec![
                Attribute::new("name", Type::String, Mode::Required, "n"),
                Attribute::new("policy", Type::String, Mode::OptionalComputed, "p"),
                Attribute::new("secret", Type::String, Mode::Computed, "s").sensitive(),
            ],
            blocks: vec![NestedBlock {
                name: "timeouts",
                block: Block {
                    attributes: vec![Attribute::new("create", Type::String, Mode::Optional, "")],
                    ..Block::default()
                },
            }],
            description: "",
        }
    }

    #[test]
    fn implied_type_includes_attributes_and_blocks() {
        assert_eq!(
            block().implied_type(),
            Type::object([
                ("name", Type::String),
                ("policy", Type::String),
                ("secret", Type::String),
                ("timeouts", Type::object([("create", Type::String)])),
            ])
        );
    }

    #[test]
    fn modes_map_to_exactly_one_flag_combination() {
        let p = block().to_proto();
        let flags: Vec<_> = p
            .attributes
            .iter()
            .map(|a| {
                (
                    a.name.as_str(),
                    a.required,
                    a.optional,
                    a.computed,
                    a.sensitive,
                )
            })
            .collect();
        assert_eq!(
            flags,
            vec![
                ("name", true, false, false, false),
                ("policy", false, true, true, false),
                ("secret", false, false, true, true),
            ]
        );
        assert_eq!(p.block_types[0].nesting, 1, "SINGLE");
        assert_eq!(p.attributes[0].r#type, b"\"string\"");
    }
}
