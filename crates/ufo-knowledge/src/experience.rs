//! Worked examples: what a session did to finish a subtask (experience), or what a person
//! showed once (a demonstration), as named steps. Both are stored as documents of their kind
//! (`experience`, `demo`) whose location is the example's id, so they are searched, listed and
//! forgotten like any page, and many processes can save at once.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use ufo_core::KnowledgeKind;

use crate::extract::Page;
use crate::store::Document;

/// Most steps kept of one example.
pub const MAX_STEPS: usize = 60;
/// Most characters of one field (request, subtask, result, a plan item, a step's args).
const FIELD_CHARS: usize = 1_000;

/// One step of an example, named by the control it acted on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NamedStep {
    /// The function (`click`, `type_keys`, ...).
    pub function: String,
    /// The control's name, if the step acted on one.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub control_name: String,
    /// The control's role (`button`, `edit`, ...), when known.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub control_role: String,
    /// The function's arguments.
    #[serde(default)]
    pub args: Value,
}

/// A worked example: a request, the application, and the steps that did it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Example {
    /// The person's request.
    pub request: String,
    /// The subtask (experience), when the example is one part of a request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subtask: Option<String>,
    /// The application (name or process name).
    pub application: String,
    /// The host's plan when it was done.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plan: Vec<String>,
    /// The steps, in order.
    pub steps: Vec<NamedStep>,
    /// What it gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// A short summary with tips, written by the summary model (`[knowledge] summary_model`)
    /// when one is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

impl Example {
    /// The example as the text a prompt shows: what was asked, then each step on one line.
    pub fn text(&self) -> String {
        let mut out = format!("Request: {}\n", clip(&self.request));
        if let Some(s) = &self.subtask {
            out.push_str(&format!("Subtask: {}\n", clip(s)));
        }
        out.push_str(&format!("Application: {}\n", clip(&self.application)));
        // before the steps, so that a prompt's per-snippet cap keeps the tips
        if let Some(summary) = &self.summary {
            out.push_str(&format!("Summary: {}\n", clip(summary)));
        }
        if !self.plan.is_empty() {
            let plan: Vec<String> = self.plan.iter().take(20).map(|p| clip(p)).collect();
            out.push_str(&format!("Plan: {}\n", plan.join("; ")));
        }
        out.push_str("Steps:\n");
        for (i, s) in self.steps.iter().take(MAX_STEPS).enumerate() {
            let on = match (s.control_role.as_str(), s.control_name.as_str()) {
                ("", "") => String::new(),
                ("", name) => format!(" on \"{}\"", clip(name)),
                (role, name) => format!(" on {role} \"{}\"", clip(name)),
            };
            let args = match &s.args {
                Value::Null => String::new(),
                Value::Object(m) if m.is_empty() => String::new(),
                a => format!(" {}", clip(&a.to_string())),
            };
            out.push_str(&format!("{}. {}{on}{args}\n", i + 1, s.function));
        }
        if let Some(r) = &self.result {
            out.push_str(&format!("Result: {}\n", clip(r)));
        }
        out
    }

    /// The example as a document of `kind` (experience or demo) at location `id`, from
    /// `source` (e.g. `session`, `demo`).
    pub fn to_document(&self, kind: KnowledgeKind, id: &str, source: &str) -> Document {
        let title = self.subtask.clone().unwrap_or_else(|| self.request.clone());
        let keywords = match &self.subtask {
            Some(_) => self.request.clone(),
            None => String::new(),
        };
        Document {
            kind,
            location: id.to_string(),
            source: source.to_string(),
            apps: crate::apps::app_tag(&self.application)
                .into_iter()
                .collect(),
            page: Page {
                title: clip(&title),
                headings: String::new(),
                keywords: clip(&keywords),
                body: self.text(),
            },
        }
    }
}

fn clip(s: &str) -> String {
    ufo_core::knowledge::clip(s, FIELD_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn example() -> Example {
        Example {
            request: "Multiply 12 by 7 on the calculator".into(),
            subtask: Some("Multiply 12 by 7".into()),
            application: "gnome-calculator".into(),
            plan: vec!["multiply".into()],
            steps: vec![
                NamedStep {
                    function: "type_keys".into(),
                    control_name: "Display".into(),
                    control_role: "edit".into(),
                    args: json!({"keys": "12×7="}),
                },
                NamedStep {
                    function: "click".into(),
                    control_name: "Equals".into(),
                    control_role: String::new(),
                    args: json!({}),
                },
            ],
            result: Some("84".into()),
            summary: None,
        }
    }

    #[test]
    fn the_text_names_each_step_by_its_control() {
        let t = example().text();
        assert!(t.contains("Subtask: Multiply 12 by 7\n"));
        assert!(t.contains("1. type_keys on edit \"Display\" {\"keys\":\"12×7=\"}\n"));
        assert!(t.contains("2. click on \"Equals\"\n"));
        assert!(t.ends_with("Result: 84\n"));
    }

    #[test]
    fn the_document_is_of_its_kind_at_its_id_for_its_application() {
        let d = example().to_document(KnowledgeKind::Experience, "exp:1", "session");
        assert_eq!(d.kind, KnowledgeKind::Experience);
        assert_eq!(d.location, "exp:1");
        assert_eq!(d.page.title, "Multiply 12 by 7");
        assert_eq!(
            d.apps,
            vec![crate::apps::app_tag("gnome-calculator").unwrap()]
        );
        let demo = Example {
            subtask: None,
            ..example()
        }
        .to_document(KnowledgeKind::Demo, "demo:/x", "demo");
        assert_eq!(demo.page.title, "Multiply 12 by 7 on the calculator");
    }

    #[test]
    fn a_summary_comes_before_the_steps() {
        let mut e = example();
        assert!(!e.text().contains("Summary:"));
        e.summary = Some("Typed 12×7=. Tip: the display keeps the first number.".into());
        let t = e.text();
        let summary = t
            .find("Summary: Typed 12×7=. Tip: the display keeps the first number.\n")
            .expect("the summary is in the text");
        assert!(summary < t.find("Steps:").expect("steps"), "{t}");
    }

    #[test]
    fn fields_are_bounded() {
        let mut e = example();
        e.request = "x".repeat(100_000);
        e.steps = vec![e.steps[0].clone(); 1_000];
        let t = e.text();
        assert!(t.chars().count() < 2 * FIELD_CHARS + MAX_STEPS * 200);
    }
}
