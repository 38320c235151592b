//! The value layer: cty types and values, and their msgpack/JSON wire forms.
//!
//! This module knows nothing about tenants or Kubernetes. It is the Rust counterpart of
//! go-cty as far as a provider needs it: values that can be null or unknown at any depth,
//! decoded and encoded by walking a [`Type`] so that every object is schema-complete.

mod json;
mod msgpack;
mod types;

pub use json::from_json;
pub use msgpack::{from_msgpack, to_msgpack};
pub use types::Type;

use std::collections::BTreeMap;

/// A cty number. Terraform may send an integer, a float, or a decimal string for numbers
/// that fit neither; we keep the form it used so a value round-trips unchanged.
#[derive(Debug, Clone, PartialEq)]
pub enum Number {
    Int(i64),
    Float(f64),
    Decimal(String),
}

/// A cty value. Lists, sets and tuples share `List`; maps and objects are kept apart
/// because an object's keys come from the schema while a map's come from the user.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Value {
    #[default]
    Null,
    /// Not known until apply. Any refinement Terraform attached is dropped on purpose:
    /// we never emit refinements, so we cannot break a promise made by one.
    Unknown,
    Bool(bool),
    Number(Number),
    String(String),
    List(Vec<Value>),
    Map(BTreeMap<String, Value>),
    Object(BTreeMap<String, Value>),
}

static NULL: Value = Value::Null;

impl Value {
    pub fn string(s: impl Into<String>) -> Self {
        Value::String(s.into())
    }

    /// A string value, or null when `s` is `None`.
    pub fn opt_string(s: Option<impl Into<String>>) -> Self {
        s.map_or(Value::Null, |s| Value::String(s.into()))
    }

    pub fn object<K: Into<String>>(fields: impl IntoIterator<Item = (K, Value)>) -> Self {
        Value::Object(fields.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }

    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn is_unknown(&self) -> bool {
        matches!(self, Value::Unknown)
    }

    /// True when neither this value nor anything nested in it is unknown.
    pub fn is_wholly_known(&self) -> bool {
        match self {
            Value::Unknown => false,
            Value::List(items) => items.iter().all(Value::is_wholly_known),
            Value::Map(m) | Value::Object(m) => m.values().all(Value::is_wholly_known),
            _ => true,
        }
    }

    /// An attribute of an object. Absent attributes, and attributes of a null or unknown
    /// object, read as null: callers check `is_unknown` on the object itself when it matters.
    pub fn get(&self, name: &str) -> &Value {
        match self {
            Value::Object(m) => m.get(name).unwrap_or(&NULL),
            _ => &NULL,
        }
    }

    /// Sets an attribute; turns a null value into an object first.
    pub fn set(&mut self, name: &str, value: Value) {
        if !matches!(self, Value::Object(_)) {
            *self = Value::Object(BTreeMap::new());
        }
        if let Value::Object(m) = self {
            m.insert(name.to_owned(), value);
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
}

/// Where a value went wrong, as a dotted path (`timeouts.create`, `tags["a"]`, `list[0]`).
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ValueError {
    #[error("{path}: expected {expected}, found {found}")]
    TypeMismatch {
        path: String,
        expected: String,
        found: String,
    },
    #[error("{path}: unsupported attribute {name:?}")]
    UnsupportedAttribute { path: String, name: String },
    #[error("invalid msgpack: {0}")]
    Msgpack(String),
    #[error("invalid JSON: {0}")]
    Json(String),
    #[error("{0} bytes left over after the value")]
    TrailingBytes(usize),
}

impl ValueError {
    pub(crate) fn mismatch(path: &str, expected: &str, found: &str) -> Self {
        ValueError::TypeMismatch {
            path: path.to_owned(),
            expected: expected.to_owned(),
            found: found.to_owned(),
        }
    }
}

pub(crate) fn child_path(parent: &str, attr: &str) -> String {
    if parent.is_empty() {
        attr.to_owned()
    } else {
        format!("{parent}.{attr}")
    }
}

pub(crate) fn index_path(parent: &str, index: impl std::fmt::Debug) -> String {
    format!("{parent}[{index:?}]")
}
