//! Logs as hclog JSON lines on stderr, the format go-plugin parses: Terraform then shows
//! them with the right level under `TF_LOG=DEBUG` / `TF_LOG_PROVIDER=TRACE` instead of as
//! raw text. `@timestamp` must match Go's `2006-01-02T15:04:05.000000Z07:00` exactly, or
//! go-plugin falls back to raw-line handling.

use std::fmt;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

/// The default keeps our own debug logs (Terraform filters by level anyway) and only
/// warnings from the libraries underneath. `KUBESPACES_PROVIDER_LOG` overrides it with an
/// `EnvFilter` directive.
const DEFAULT_FILTER: &str = "warn,terraform_provider_kubespaces=debug";

pub fn init() {
    let filter = std::env::var("KUBESPACES_PROVIDER_LOG")
        .ok()
        .and_then(|d| EnvFilter::try_new(d).ok())
        .unwrap_or_else(|| EnvFilter::new(DEFAULT_FILTER));
    // try_init: a second call (tests) must not panic.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .event_format(Hclog)
        .try_init();
}

pub struct Hclog;

#[derive(Default)]
struct Fields {
    message: String,
    rest: serde_json::Map<String, serde_json::Value>,
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.put(field, serde_json::Value::String(format!("{value:?}")));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, serde_json::Value::String(value.to_owned()));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, value.into());
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, value.into());
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, value.into());
    }
}

impl Fields {
    fn put(&mut self, field: &Field, value: serde_json::Value) {
        if field.name() == "message" {
            self.message = match value {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
        } else {
            self.rest.insert(field.name().to_owned(), value);
        }
    }
}

fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::TRACE => "trace",
        Level::DEBUG => "debug",
        Level::INFO => "info",
        Level::WARN => "warn",
        Level::ERROR => "error",
    }
}

/// `2026-11-30T08:51:44.123456Z`: six fractional digits, UTC.
pub fn timestamp(ts: jiff::Timestamp) -> String {
    let micros = ts.subsec_nanosecond() / 1_000;
    format!("{}.{micros:06}Z", ts.strftime("%Y-%m-%dT%H:%M:%S"))
}

pub fn line(
    level: &Level,
    target: &str,
    fields: serde_json::Map<String, serde_json::Value>,
    message: String,
    ts: jiff::Timestamp,
) -> String {
    let mut obj = fields;
    obj.insert("@level".into(), level_name(level).into());
    obj.insert("@message".into(), message.into());
    obj.insert("@module".into(), format!("kubespaces.{target}").into());
    obj.insert("@timestamp".into(), timestamp(ts).into());
    serde_json::Value::Object(obj).to_string()
}

impl<S, N> FormatEvent<S, N> for Hclog
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        let meta = event.metadata();
        let target = meta.target().split("::").last().unwrap_or("provider");
        writeln!(
            writer,
            "{}",
            line(
                meta.level(),
                target,
                fields.rest,
                fields.message,
                jiff::Timestamp::now()
            )
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamp_has_go_plugins_layout() {
        let ts: jiff::Timestamp = "2025-02-27T10:00:00.5Z".parse().unwrap();
        assert_eq!(timestamp(ts), "2025-02-27T10:00:00.500000Z");
    }

    #[test]
    fn line_is_hclog_json() {
        let ts: jiff::Timestamp = "2025-02-27T10:00:00Z".parse().unwrap();
        let mut extra = serde_json::Map::new();
        extra.insert("tenant".into(), "atlas".into());
        let l = line(&Level::WARN, "plan", extra, "hello".into(), ts);
        let v: serde_json::Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["@level"], "warn");
        assert_eq!(v["@message"], "hello");
        assert_eq!(v["@module"], "kubespaces.plan");
        assert_eq!(v["@timestamp"], "2025-02-27T10:00:00.000000Z");
        assert_eq!(v["tenant"], "atlas");
    }
}
