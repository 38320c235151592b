//! msgpack ⇄ [`Value`], the encoding Terraform uses for every `DynamicValue` it sends.
//!
//! Rules (go-cty `cty/msgpack`, Terraform `docs/plugin-protocol/object-wire-format.md`):
//! null is `nil`; *any* extension type is an unknown (Terraform ≥1.6 sends ext 12 with
//! refinements); we write unknowns as go-cty does, `d4 00 00`; numbers may arrive as int,
//! float or decimal string; an object is a map with exactly one entry per attribute, so
//! encoding walks the type and fills gaps with null rather than trusting the value.

use std::collections::BTreeMap;

use rmpv::Value as Mp;

use super::{Number, Type, Value, ValueError, child_path, index_path};

/// Decodes a msgpack `DynamicValue` against the type the schema implies.
/// Empty input is null, as in Terraform's own `decodeDynamicValue`.
pub fn from_msgpack(bytes: &[u8], ty: &Type) -> Result<Value, ValueError> {
    if bytes.is_empty() {
        return Ok(Value::Null);
    }
    let mut rd = bytes;
    let raw = rmpv::decode::read_value(&mut rd).map_err(|e| ValueError::Msgpack(e.to_string()))?;
    if !rd.is_empty() {
        return Err(ValueError::TrailingBytes(rd.len()));
    }
    decode(raw, ty, "")
}

/// Encodes a value as msgpack, schema-complete: every object attribute of `ty` is written.
pub fn to_msgpack(value: &Value, ty: &Type) -> Result<Vec<u8>, ValueError> {
    let raw = encode(value, ty, "")?;
    let mut out = Vec::new();
    rmpv::encode::write_value(&mut out, &raw).map_err(|e| ValueError::Msgpack(e.to_string()))?;
    Ok(out)
}

fn found(raw: &Mp) -> &'static str {
    match raw {
        Mp::Nil => "nil",
        Mp::Boolean(_) => "bool",
        Mp::Integer(_) | Mp::F32(_) | Mp::F64(_) => "number",
        Mp::String(_) => "string",
        Mp::Binary(_) => "binary",
        Mp::Array(_) => "array",
        Mp::Map(_) => "map",
        Mp::Ext(..) => "extension",
    }
}

fn decode(raw: Mp, ty: &Type, path: &str) -> Result<Value, ValueError> {
    match (raw, ty) {
        (Mp::Nil, _) => Ok(Value::Null),
        (Mp::Ext(..), _) => Ok(Value::Unknown),
        (Mp::Boolean(b), Type::Bool) => Ok(Value::Bool(b)),
        (Mp::Integer(i), Type::Number) => Ok(Value::Number(match i.as_i64() {
            Some(i) => Number::Int(i),
            // Only a u64 above i64::MAX gets here; keep it exact as a decimal string.
            None => Number::Decimal(i.to_string()),
        })),
        (Mp::F32(f), Type::Number) => Ok(Value::Number(Number::Float(f64::from(f)))),
        (Mp::F64(f), Type::Number) => Ok(Value::Number(Number::Float(f))),
        (Mp::String(s), Type::Number) => match s.into_str() {
            Some(s) if s.parse::<f64>().is_ok() => Ok(Value::Number(Number::Decimal(s))),
            _ => Err(ValueError::mismatch(path, "number", "non-numeric string")),
        },
        (Mp::String(s), Type::String) => match s.into_str() {
            Some(s) => Ok(Value::String(s)),
            None => Err(ValueError::mismatch(path, "string", "invalid UTF-8")),
        },
        (Mp::Array(items), Type::List(e) | Type::Set(e)) => items
            .into_iter()
            .enumerate()
            .map(|(i, item)| decode(item, e, &index_path(path, i)))
            .collect::<Result<_, _>>()
            .map(Value::List),
        (Mp::Map(entries), Type::Map(e)) => {
            let mut out = BTreeMap::new();
            for (k, v) in entries {
                let key = map_key(k, path)?;
                let item = decode(v, e, &index_path(path, &key))?;
                out.insert(key, item);
            }
            Ok(Value::Map(out))
        }
        (Mp::Map(entries), Type::Object(attrs)) => {
            let mut out = BTreeMap::new();
            for (k, v) in entries {
                let key = map_key(k, path)?;
                let Some(attr_ty) = attrs.get(&key) else {
                    return Err(ValueError::UnsupportedAttribute {
                        path: path.to_owned(),
                        name: key,
                    });
                };
                let item = decode(v, attr_ty, &child_path(path, &key))?;
                out.insert(key, item);
            }
            // Terraform always sends every attribute; tolerate gaps as null anyway.
            for name in attrs.keys() {
                out.entry(name.clone()).or_insert(Value::Null);
            }
            Ok(Value::Object(out))
        }
        (raw, ty) => Err(ValueError::mismatch(path, ty.friendly_name(), found(&raw))),
    }
}

fn map_key(k: Mp, path: &str) -> Result<String, ValueError> {
    match k {
        Mp::String(s) => s
            .into_str()
            .ok_or_else(|| ValueError::mismatch(path, "string key", "invalid UTF-8")),
        other => Err(ValueError::mismatch(path, "string key", found(&other))),
    }
}

fn unknown() -> Mp {
    // fixext1, type 0, payload 0: exactly what go-cty writes for an unrefined unknown.
    Mp::Ext(0, vec![0])
}

fn value_mismatch(path: &str, ty: &Type, value: &Value) -> ValueError {
    let found = match value {
        Value::Null => "null",
        Value::Unknown => "unknown",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Object(_) => "object",
    };
    ValueError::mismatch(path, ty.friendly_name(), found)
}

fn encode(value: &Value, ty: &Type, path: &str) -> Result<Mp, ValueError> {
    Ok(match (value, ty) {
        (Value::Null, _) => Mp::Nil,
        (Value::Unknown, _) => unknown(),
        (Value::Bool(b), Type::Bool) => Mp::Boolean(*b),
        (Value::Number(Number::Int(i)), Type::Number) => Mp::from(*i),
        (Value::Number(Number::Float(f)), Type::Number) => Mp::F64(*f),
        (Value::Number(Number::Decimal(s)), Type::Number) => Mp::from(s.as_str()),
        (Value::String(s), Type::String) => Mp::from(s.as_str()),
        (Value::List(items), Type::List(e) | Type::Set(e)) => Mp::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| encode(item, e, &index_path(path, i)))
                .collect::<Result<_, _>>()?,
        ),
        (Value::Map(m), Type::Map(e)) => Mp::Map(
            m.iter()
                .map(|(k, v)| Ok((Mp::from(k.as_str()), encode(v, e, &index_path(path, k))?)))
                .collect::<Result<_, ValueError>>()?,
        ),
        (Value::Object(m), Type::Object(attrs)) => {
            if let Some(extra) = m.keys().find(|k| !attrs.contains_key(*k)) {
                return Err(ValueError::UnsupportedAttribute {
                    path: path.to_owned(),
                    name: extra.clone(),
                });
            }
            // Walk the type, not the value: a missing attribute becomes nil, so the
            // output always has exactly one entry per attribute (sorted, like go-cty).
            Mp::Map(
                attrs
                    .iter()
                    .map(|(name, attr_ty)| {
                        let v = m.get(name).unwrap_or(&Value::Null);
                        Ok((
                            Mp::from(name.as_str()),
                            encode(v, attr_ty, &child_path(path, name))?,
                        ))
                    })
                    .collect::<Result<_, ValueError>>()?,
            )
        }
        (value, ty) => return Err(value_mismatch(path, ty, value)),
    })
}

#[cfg(test)]
#[path = "msgpack_tests.rs"]
mod tests;
