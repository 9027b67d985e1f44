//! Prompt templates (minijinja) for both agents, overridable from `ufo.toml`.
//!
//! The built-in templates tell a real model the response schema, the functions it may call
//! and when to use each Status. Overrides receive the same variables.

use minijinja::Environment;
use serde::Serialize;

use crate::config::PromptTemplates;

/// A template that failed to compile or render.
#[derive(Debug, thiserror::Error)]
#[error("prompt template {name:?}: {message}; fix the template in the [prompts] table of ufo.toml")]
pub struct PromptError {
    /// Template name (`host_system`, ...).
    pub name: String,
    /// What went wrong.
    pub message: String,
}

/// The built-in HostAgent system prompt.
pub const HOST_SYSTEM: &str = r#"You are the HostAgent of ufo-rs, a desktop agent on a Linux desktop. You turn the person's request into subtasks, choose the application window for each, and hand each subtask to an AppAgent that operates that application. You do not click controls yourself.

Answer with ONE JSON object and nothing else, with these fields:
- "Observation": what you see in the window list and screenshot (required).
- "Thought": your reasoning for the next move (required).
- "Current Sub-Task": the one subtask to do now, stated so the AppAgent can do it alone.
- "Message": a list of hints for the AppAgent (may be empty).
- "ControlLabel": the label of the chosen window from the window list.
- "ControlText": the title or application name of that window (or the name of an application to launch).
- "Plan": a list of the subtasks still to do after this one.
- "Status": one of CONTINUE, ASSIGN, FINISH, FAIL, PENDING, CONFIRM (required).
- "Comment": a short note for the person.
- "Questions": a list of questions for the person (only with PENDING).
- "Bash": a shell command to run before the window is chosen, e.g. the launch command of an application that is not running (may be empty).

When to use each Status:
- ASSIGN: hand "Current Sub-Task" to the window named by ControlLabel/ControlText. If the application is not running, put its launch command in "Bash" in the same answer.
- CONTINUE: you ran a "Bash" command or need another look before assigning.
- FINISH: the whole request is done; check the finished subtasks first.
- FAIL: the request cannot be done (impossible, or repeated subtask failures).
- PENDING: you need information only the person has; put it in "Questions".
- CONFIRM: your "Bash" command or assignment is risky; the person approves it before it runs.
{% if extra %}
{{ extra }}{% endif %}"#;

/// The built-in HostAgent user prompt.
pub const HOST_USER: &str = r#"Request: {{ request }}
{% if blackboard %}
Blackboard (shared by all agents):
{{ blackboard }}{% endif %}
Windows on the desktop:
{% for w in windows %}  [{{ w.label }}] {{ w.title }} (application: {{ w.app_name }}, process: {{ w.process }})
{% else %}  (no windows are open)
{% endfor %}{% if agents %}
Agents you can assign to like a window (by label or name):
{% for a in agents %}  [{{ a.label }}] {{ a.name }}: {{ a.description }}
{% endfor %}{% endif %}{% if launchable %}
Applications that are not running and can be launched (put the command in "Bash"):
{% for a in launchable %}  {{ a.name }}: {{ a.command }}
{% endfor %}{% endif %}{% if previous_subtasks %}
Previous subtasks:
{% if earlier_summary %}  ({{ earlier_summary }})
{% endif %}{% for s in earlier_subtasks %}  - [{{ s.status }}] {{ s.subtask }} ({{ s.agent }})
{% endfor %}{% for s in previous_subtasks %}  - [{{ s.status }}] {{ s.subtask }} ({{ s.agent }}) result: {{ s.result }}
{% endfor %}{% endif %}{% if plan %}
Your plan so far:
{% for p in plan %}  - {{ p }}
{% endfor %}{% endif %}{% if memory %}
Your previous steps:
{% for m in memory %}  {{ m }}
{% endfor %}{% endif %}{% if last_result %}
Result of your last step: {{ last_result }}
{% endif %}{% if knowledge %}
{{ knowledge }}{% endif %}
Answer with one JSON object."#;

/// The built-in AppAgent system prompt.
pub const APP_SYSTEM: &str = r#"You are an AppAgent of ufo-rs. You operate the application window "{{ window_title }}" to complete one subtask, one action per answer, through its controls, which are listed with numbered labels (the same numbers are drawn on the annotated screenshot).

Answer with ONE JSON object and nothing else, with these fields:
- "Observation": what you see (required).
- "Thought": your reasoning (required).
- "ControlLabel": the label of the control to act on (the number in [N] of its line).
- "ControlText": the name of that control, exactly as listed (a name made of digits is a name, never a label; copying its whole line, such as `menu "Slide"`, tells apart controls that share a name).
- "Function": the function to call, or "" for no action.
- "Args": the function's arguments as a JSON object.
- "Status": one of CONTINUE, SCREENSHOT, FINISH, FAIL, PENDING, CONFIRM, ERROR (required).
- "Comment": a short note for the person.
- "Plan": a list of the steps still to do.
- "Questions": questions for the person (only with PENDING).
- "Result": the subtask's result (e.g. text you read) when you FINISH.

Functions:
- click: Args {"button": "left"|"right"|"middle", "double": false}
- set_text: Args {"text": "..."} replaces the control's text
- type_keys: Args {"keys": "..."} types text; special keys {ENTER} {TAB} {ESC} {BACKSPACE}, chords like {ctrl+s}
- scroll: Args {"direction": "up"|"down", "amount": 3}
- select: Args {"item": "..."} chooses an entry of a list or combo box
- read_text: Args {} reads the control's text into the result
- focus: Args {} gives the control the focus
- click_at: Args {"x": 10, "y": 20} clicks at window pixels; no control needed
- hover: Args {} rests the pointer on the control without clicking; what that shows (a tooltip) is in the next observation
{% if read_pixels %}- read_pixels: Args {} reads the text drawn in the window's pixels where no listed control lies (a canvas, a chart, a program that names nothing); what it finds is listed next time as controls with "source": "ocr"; no control needed
{% endif %}{% if extra_functions %}{{ extra_functions }}
{% endif %}{% if multi_action %}
Several actions in one answer: instead of ControlLabel/ControlText/Function/Args you may give
"Actions": [{"ControlLabel": "3", "ControlText": "Name", "Function": "set_text", "Args": {"text": "x"}}, ...].
They run in order; before each, the control is checked again, and the first one that can no
longer run (gone, hidden, disabled) stops the list: you are told how far it got. Use it only for
actions that do not change which controls exist (e.g. filling several fields).
{% endif %}
When to use each Status (the action in the same answer runs first, then the status applies):
- CONTINUE: more actions are needed.
- SCREENSHOT: your action will change the window (a dialog or menu opens); you get a fresh capture with new labels.
- FINISH: the subtask is done; put what it produced in "Result".
- FAIL: the subtask cannot be done in this application.
- PENDING: you need information only the person has; put it in "Questions". Your action is not run.
- CONFIRM: your action is risky or irreversible (delete, send, overwrite, install); it is held until the person approves.
- ERROR: only when the application is broken beyond use.
If an action fails, its error is shown to you in the next step; try another way."#;

/// The built-in AppAgent user prompt.
pub const APP_USER: &str = r#"Subtask: {{ subtask }}
{% if messages %}Hints from the HostAgent:
{% for m in messages %}  - {{ m }}
{% endfor %}{% endif %}Original request: {{ request }}
{% if blackboard %}
Blackboard (shared by all agents):
{{ blackboard }}{% endif %}
Window: {{ window_title }}{% if fresh %} (fresh capture after the UI changed){% endif %}
Controls:
{% for c in controls %}  [{{ c.label }}] {{ c.role }} "{{ c.name }}"{% if c.value is not none %} value: {{ c.value | tojson }}{% endif %}{% if not c.enabled %} (disabled){% endif %}{% if c.states %} [{{ c.states | join(", ") }}]{% endif %}
{% else %}  (no controls found)
{% endfor %}{% if memory %}
Your previous steps:
{% for m in memory %}  {{ m }}
{% endfor %}{% endif %}{% if last_result %}
Result of your last action: {{ last_result }}
{% endif %}{% if changes %}{{ changes }}
{% endif %}{% if knowledge %}
{{ knowledge }}{% endif %}
Answer with one JSON object."#;

/// Compiled prompt templates.
#[derive(Debug)]
pub struct Prompts {
    env: Environment<'static>,
}

impl Prompts {
    /// Compile the built-in templates with the given overrides.
    pub fn new(overrides: &PromptTemplates) -> Result<Self, PromptError> {
        let mut env = Environment::new();
        env.set_trim_blocks(false);
        let pick = |o: &Option<String>, d: &'static str| o.clone().unwrap_or_else(|| d.to_string());
        let sources = [
            ("host_system", pick(&overrides.host_system, HOST_SYSTEM)),
            ("host_user", pick(&overrides.host_user, HOST_USER)),
            ("app_system", pick(&overrides.app_system, APP_SYSTEM)),
            ("app_user", pick(&overrides.app_user, APP_USER)),
        ];
        for (name, src) in sources {
            env.add_template_owned(name, src).map_err(|e| PromptError {
                name: name.into(),
                message: e.to_string(),
            })?;
        }
        Ok(Self { env })
    }

    /// Render one template with a serialisable context.
    pub fn render<S: Serialize>(&self, name: &str, ctx: &S) -> Result<String, PromptError> {
        let err = |e: minijinja::Error| PromptError {
            name: name.into(),
            message: e.to_string(),
        };
        self.env
            .get_template(name)
            .map_err(err)?
            .render(ctx)
            .map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn built_in_templates_render_schema_and_functions() {
        let p = Prompts::new(&PromptTemplates::default()).expect("compile");
        let s = p
            .render("app_system", &json!({"window_title": "W"}))
            .expect("render");
        assert!(s.contains("SCREENSHOT") && s.contains("set_text") && s.contains("\"Status\""));
        let u = p
            .render(
                "app_user",
                &json!({"subtask": "do", "request": "r", "window_title": "W",
                        "controls": [{"label": 1, "role": "button", "name": "OK", "value": null, "enabled": true}]}),
            )
            .expect("render");
        assert!(u.contains("[1] button \"OK\""), "{u}");
    }

    /// `read_pixels` is offered only where the desktop reads pixels (docs/sight.md): prompts
    /// of every other desktop stay as they were.
    #[test]
    fn read_pixels_is_offered_only_where_pixels_are_read() {
        let p = Prompts::new(&PromptTemplates::default()).expect("compile");
        let without = p
            .render("app_system", &json!({"window_title": "W"}))
            .expect("render");
        assert!(!without.contains("read_pixels"), "{without}");
        let with = p
            .render(
                "app_system",
                &json!({"window_title": "W", "read_pixels": true}),
            )
            .expect("render");
        let line = with
            .lines()
            .find(|l| l.starts_with("- read_pixels: Args {}"))
            .expect("the function is listed");
        assert!(line.contains("no control needed"), "{line}");
        assert_eq!(
            with.replace(&format!("{line}\n"), ""),
            without,
            "only the line is added"
        );
    }

    /// The block the user prompts carry for retrieved knowledge.
    const KNOWLEDGE_BLOCK: &str = "{% if knowledge %}\n{{ knowledge }}{% endif %}";

    #[test]
    fn without_knowledge_the_user_prompts_are_byte_for_byte_as_before() {
        let new = Prompts::new(&PromptTemplates::default()).expect("compile");
        let before = PromptTemplates {
            host_user: Some(HOST_USER.replace(KNOWLEDGE_BLOCK, "")),
            app_user: Some(APP_USER.replace(KNOWLEDGE_BLOCK, "")),
            ..Default::default()
        };
        let old = Prompts::new(&before).expect("compile");
        assert_ne!(
            before.app_user.as_deref(),
            Some(APP_USER),
            "the block is in the template"
        );
        let ctx = json!({"subtask": "do", "request": "r", "window_title": "W", "memory": ["m"],
            "last_result": "ok", "changes": "c", "windows": [], "plan": ["p"],
            "controls": [{"label": 1, "role": "button", "name": "OK", "value": null, "enabled": true}]});
        let empty = json!({"subtask": "do", "request": "r", "window_title": "W", "knowledge": "",
            "controls": [], "windows": []});
        for name in ["host_user", "app_user"] {
            assert_eq!(
                new.render(name, &ctx).unwrap(),
                old.render(name, &ctx).unwrap()
            );
            let no_ctx = json!({"subtask": "do", "request": "r", "window_title": "W",
                "controls": [], "windows": []});
            assert_eq!(
                new.render(name, &empty).unwrap(),
                old.render(name, &no_ctx).unwrap()
            );
        }
        // With knowledge, the sections come right before the closing line.
        let mut with = ctx.clone();
        with["knowledge"] = json!("Retrieved knowledge (...):\nReference:\n- [docs] t (l)\n  x\n");
        let u = new.render("app_user", &with).unwrap();
        assert!(u.ends_with("  x\n\nAnswer with one JSON object."), "{u}");
    }

    #[test]
    fn a_broken_override_is_reported_by_name() {
        let o = PromptTemplates {
            host_user: Some("{% for %}".into()),
            ..Default::default()
        };
        let e = Prompts::new(&o).unwrap_err();
        assert_eq!(e.name, "host_user");
        assert!(e.to_string().contains("ufo.toml"));
    }
}
