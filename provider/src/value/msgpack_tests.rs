//! Golden bytes from Terraform's wire format (tfplugin reference §3.3, computed with go-cty's
//! rules), plus the cases that bite in practice: refined unknowns, absent blocks, numbers.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

fn ty() -> Type {
    Type::object([
        ("id", Type::String),
        ("name", Type::String),
        ("namespace", Type::String),
        ("ready", Type::Bool),
        (
            "timeouts",
            Type::object([("create", Type::String), ("delete", Type::String)]),
        ),
    ])
}

const PLANNED: &str = "85 a2 69 64 d4 00 00 a4 6e 61 6d 65 a4 61 63 6d 65 a9 6e 61 6d 65 73 70 61 63 65 \
    a7 64 65 66 61 75 6c 74 a5 72 65 61 64 79 d4 00 00 a8 74 69 6d 65 6f 75 74 73 82 a6 63 72 65 \
    61 74 65 a3 31 30 6d a6 64 65 6c 65 74 65 c0";

fn planned() -> Value {
    Value::object([
        ("id", Value::Unknown),
        ("name", Value::string("acme")),
        ("namespace", Value::string("default")),
        ("ready", Value::Unknown),
        (
            "timeouts",
            Value::object([("create", Value::string("10m")), ("delete", Value::Null)]),
        ),
    ])
}

#[test]
fn encodes_planned_state_byte_for_byte_like_go_cty() {
    assert_eq!(to_msgpack(&planned(), &ty()).unwrap(), hex(PLANNED));
}

#[test]
fn decodes_planned_state() {
    assert_eq!(from_msgpack(&hex(PLANNED), &ty()).unwrap(), planned());
}

#[test]
fn encoding_fills_missing_attributes_with_null() {
    // Terraform rejects an object with a missing attribute ("an object with 5 attributes is
    // required"), so a sparse value must still produce the full map.
    let sparse = Value::object([("id", Value::Unknown), ("name", Value::string("acme"))]);
    let bytes = to_msgpack(&sparse, &ty()).unwrap();
    assert_eq!(bytes[0], 0x85, "map with five entries");
    let back = from_msgpack(&bytes, &ty()).unwrap();
    assert!(back.get("timeouts").is_null());
    assert!(back.get("ready").is_null());
    assert!(back.get("id").is_unknown());
}

#[test]
fn smallest_object_example() {
    let t = Type::object([("id", Type::String), ("name", Type::String)]);
    let v = Value::object([("id", Value::Unknown), ("name", Value::string("acme"))]);
    assert_eq!(
        to_msgpack(&v, &t).unwrap(),
        hex("82 a2 69 64 d4 00 00 a4 6e 61 6d 65 a4 61 63 6d 65")
    );
}

#[test]
fn any_extension_type_decodes_as_unknown() {
    // A refined unknown string ("not null, prefix acme-") as Terraform ≥1.6 sends it.
    let refined = hex("c7 0a 0c 82 01 c2 02 a5 61 63 6d 65 2d");
    assert_eq!(
        from_msgpack(&refined, &Type::String).unwrap(),
        Value::Unknown
    );
    // The empty ext that other encoders write.
    assert_eq!(
        from_msgpack(&hex("c7 00 00"), &Type::Bool).unwrap(),
        Value::Unknown
    );
    // And we always answer with go-cty's plain form, never a refinement.
    assert_eq!(
        to_msgpack(&Value::Unknown, &Type::String).unwrap(),
        hex("d4 00 00")
    );
}

#[test]
fn null_and_empty_input() {
    assert_eq!(from_msgpack(&[], &ty()).unwrap(), Value::Null);
    assert_eq!(from_msgpack(&[0xc0], &ty()).unwrap(), Value::Null);
    assert_eq!(to_msgpack(&Value::Null, &ty()).unwrap(), vec![0xc0]);
}

#[test]
fn numbers_arrive_as_int_float_or_string() {
    let t = Type::Number;
    assert_eq!(
        from_msgpack(&[0x05], &t).unwrap(),
        Value::Number(Number::Int(5))
    );
    let f = hex("cb 3f f8 00 00 00 00 00 00"); // 1.5 as float64
    assert_eq!(
        from_msgpack(&f, &t).unwrap(),
        Value::Number(Number::Float(1.5))
    );
    let big = to_msgpack(
        &Value::string("123456789012345678901234567890"),
        &Type::String,
    )
    .unwrap();
    assert_eq!(
        from_msgpack(&big, &t).unwrap(),
        Value::Number(Number::Decimal("123456789012345678901234567890".into()))
    );
    let u64max = hex("cf ff ff ff ff ff ff ff ff");
    assert_eq!(
        from_msgpack(&u64max, &t).unwrap(),
        Value::Number(Number::Decimal(u64::MAX.to_string()))
    );
    // A non-numeric string is not a number.
    let s = to_msgpack(&Value::string("ten"), &Type::String).unwrap();
    assert!(from_msgpack(&s, &t).is_err());
}

#[test]
fn numbers_round_trip_in_their_own_form() {
    for n in [
        Number::Int(-7),
        Number::Float(0.25),
        Number::Decimal("1e400".into()),
    ] {
        let v = Value::Number(n);
        let bytes = to_msgpack(&v, &Type::Number).unwrap();
        assert_eq!(from_msgpack(&bytes, &Type::Number).unwrap(), v);
    }
}

#[test]
fn nested_block_list_set_and_map_round_trip() {
    let block = Type::object([("type", Type::String), ("status", Type::String)]);
    let t = Type::object([
        ("conditions", Type::list(block.clone())),
        ("tags", Type::set(Type::String)),
        ("labels", Type::map(Type::String)),
    ]);
    let v = Value::object([
        (
            "conditions",
            Value::List(vec![
                Value::object([("type", Value::string("Ready")), ("status", Value::Unknown)]),
                Value::object([("type", Value::string("Synced")), ("status", Value::Null)]),
            ]),
        ),
        ("tags", Value::List(vec![])),
        (
            "labels",
            Value::Map([("team".to_owned(), Value::string("atlas"))].into()),
        ),
    ]);
    let bytes = to_msgpack(&v, &t).unwrap();
    assert_eq!(from_msgpack(&bytes, &t).unwrap(), v);
    // An empty LIST/SET block is an empty array (90), never nil: Terraform tells them apart.
    assert!(
        bytes
            .windows(6)
            .any(|w| w == [0xa4, b't', b'a', b'g', b's', 0x90])
    );
    let empty = to_msgpack(&Value::List(vec![]), &Type::set(Type::String)).unwrap();
    assert_eq!(empty, vec![0x90]);
}

#[test]
fn errors_name_the_attribute_path() {
    let bad = Value::object([("timeouts", Value::object([("create", Value::Bool(true))]))]);
    assert_eq!(
        to_msgpack(&bad, &ty()).unwrap_err(),
        ValueError::TypeMismatch {
            path: "timeouts.create".into(),
            expected: "string".into(),
            found: "bool".into()
        }
    );
}

#[test]
fn unsupported_attributes_are_refused_both_ways() {
    // Decoding: Terraform would never send it, so it means the schemas disagree.
    let t = Type::object([("a", Type::String)]);
    let with_b = to_msgpack(
        &Value::Map([("b".to_owned(), Value::string("x"))].into()),
        &Type::map(Type::String),
    )
    .unwrap();
    assert!(matches!(
        from_msgpack(&with_b, &t),
        Err(ValueError::UnsupportedAttribute { name, .. }) if name == "b"
    ));
    // Encoding: a typo in resource code must not silently vanish.
    let v = Value::object([("b", Value::Null)]);
    assert!(matches!(
        to_msgpack(&v, &t),
        Err(ValueError::UnsupportedAttribute { name, .. }) if name == "b"
    ));
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    // A str8 marker with no length byte.
    assert!(matches!(
        from_msgpack(&[0xd9], &ty()),
        Err(ValueError::Msgpack(_))
    ));
    assert!(matches!(
        from_msgpack(&[0x85, 0xa2], &ty()),
        Err(ValueError::Msgpack(_))
    ));
    assert_eq!(
        from_msgpack(&[0xc0, 0xc0], &ty()).unwrap_err(),
        ValueError::TrailingBytes(1)
    );
    assert!(matches!(
        from_msgpack(&[0xc3], &ty()),
        Err(ValueError::TypeMismatch { .. })
    ));
}
