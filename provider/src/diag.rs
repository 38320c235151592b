//! Diagnostics: user-facing problems travel as diagnostics with an attribute path, never
//! as gRPC errors (which Terraform shows as an unhelpful "Plugin error").

use crate::proto::tfplugin6 as tf;
use tf::attribute_path::{Step, step::Selector};
use tf::diagnostic::Severity;

/// A path to an attribute: `["timeouts", "create"]` is `timeouts.create`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttrPath(pub Vec<&'static str>);

impl AttrPath {
    pub fn root(name: &'static str) -> Self {
        Self(vec![name])
    }

    pub fn child(&self, name: &'static str) -> Self {
        let mut steps = self.0.clone();
        steps.push(name);
        Self(steps)
    }

    pub fn to_proto(&self) -> tf::AttributePath {
        tf::AttributePath {
            steps: self
                .0
                .iter()
                .map(|s| Step {
                    selector: Some(Selector::AttributeName((*s).to_owned())),
                })
                .collect(),
        }
    }
}

impl std::fmt::Display for AttrPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("."))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diag {
    pub error: bool,
    pub summary: String,
    pub detail: String,
    pub path: Option<AttrPath>,
}

impl Diag {
    pub fn error(summary: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            error: true,
            summary: summary.into(),
            detail: detail.into(),
            path: None,
        }
    }

    pub fn warning(summary: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            error: false,
            ..Self::error(summary, detail)
        }
    }

    pub fn at(mut self, path: AttrPath) -> Self {
        self.path = Some(path);
        self
    }

    pub fn to_proto(&self) -> tf::Diagnostic {
        tf::Diagnostic {
            severity: if self.error {
                Severity::Error
            } else {
                Severity::Warning
            } as i32,
            summary: self.summary.clone(),
            detail: self.detail.clone(),
            attribute: self.path.as_ref().map(AttrPath::to_proto),
        }
    }
}

pub fn to_proto(diags: &[Diag]) -> Vec<tf::Diagnostic> {
    diags.iter().map(Diag::to_proto).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_path_becomes_attribute_name_steps() {
        let d = Diag::error("bad", "worse").at(AttrPath::root("timeouts").child("create"));
        let p = d.to_proto();
        assert_eq!(p.severity, Severity::Error as i32);
        let names: Vec<_> = p
            .attribute
            .unwrap()
            .steps
            .into_iter()
            .map(|s| s.selector)
            .collect();
        assert_eq!(
            names,
            vec![
                Some(Selector::AttributeName("timeouts".into())),
                Some(Selector::AttributeName("create".into()))
            ]
        );
    }
}
