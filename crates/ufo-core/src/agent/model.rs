//! Asking the model: one [`ModelCall`], sent by [`ask_model`] with re-asks after an invalid
//! answer, its calls and tokens counted.

use std::sync::Arc;

use crate::events::LlmStats;
use crate::ports::{ChatMessage, ChatRequest, ContentPart, LlmClient, MessageRole, ResponseSchema};
use crate::processor::StepError;

/// One question to the model: who asks, how often an invalid answer is sent back, and the
/// prompt.
pub struct ModelCall<'a> {
    /// The model.
    pub llm: &'a dyn LlmClient,
    /// The asking agent's kind (`host`, `app`, a third-party kind), for scripted models and
    /// logs.
    pub agent_kind: &'a str,
    /// Re-asks after an invalid answer (`json_parsing_retry`).
    pub retries: u32,
    /// The system prompt.
    pub system: String,
    /// The user prompt.
    pub user: String,
    /// Images sent with the user prompt, each with a caption.
    pub images: Vec<(Arc<Vec<u8>>, String)>,
    /// The JSON Schema of the answer `parse` reads (`crate::response`), for providers that
    /// constrain output to it; `None` asks for JSON mode only.
    pub schema: Option<ResponseSchema>,
}

/// Ask the model (for agent kinds outside this crate too), parsing and validating with
/// `parse`; an invalid answer is sent back with its error, up to `call.retries` times. Returns
/// the parsed answer, or the error that sends the agent to ERROR. Adds the calls and tokens to
/// `stats` and appends every exchange to `transcript`.
pub async fn ask_model<T>(
    call: ModelCall<'_>,
    parse: impl Fn(&str) -> Result<T, String>,
    stats: &mut LlmStats,
    transcript: &mut String,
) -> Result<T, StepError> {
    let ModelCall {
        llm,
        agent_kind,
        retries,
        system,
        user,
        images,
        schema,
    } = call;
    let mut user_msg = ChatMessage::text(MessageRole::User, user);
    for (png, caption) in images {
        user_msg.content.push(ContentPart::Image { png, caption });
    }
    let mut request = ChatRequest {
        agent: agent_kind.to_string(),
        messages: vec![ChatMessage::text(MessageRole::System, system), user_msg],
        json_mode: true,
        response_schema: schema,
        max_tokens: None,
    };
    transcript.push_str(&request.prompt_text());
    let mut last_error = String::new();
    for attempt in 0..=retries {
        // A failed call is a call too (its HTTP attempts are named in the error).
        stats.calls += 1;
        let response = llm.complete(&request).await.map_err(StepError::Model)?;
        stats.prompt_tokens += response.usage.prompt_tokens;
        stats.completion_tokens += response.usage.completion_tokens;
        stats.cost += llm.cost(&response.usage);
        transcript.push_str("\n\n--- model answer ---\n");
        transcript.push_str(&response.text);
        match parse(&response.text) {
            Ok(v) => return Ok(v),
            Err(e) => {
                last_error = e;
                if attempt == retries {
                    break;
                }
                let fix = format!(
                    "Your answer could not be used: {last_error}. Answer again with exactly one \
                     valid JSON object with the required fields (Observation, Thought, Status)."
                );
                transcript.push_str("\n\n--- re-ask ---\n");
                transcript.push_str(&fix);
                request
                    .messages
                    .push(ChatMessage::text(MessageRole::Assistant, response.text));
                request
                    .messages
                    .push(ChatMessage::text(MessageRole::User, fix));
            }
        }
    }
    Err(StepError::InvalidAnswer {
        retries,
        reason: last_error,
    })
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;

    use super::*;
    use crate::ports::{ChatResponse, LlmError};

    struct Down;

    #[async_trait]
    impl LlmClient for Down {
        async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
            Err(LlmError::Unavailable("failed 4 time(s)".into()))
        }
        fn describe(&self) -> String {
            "down".into()
        }
    }

    /// Defect 15: a call that failed (after its HTTP retries) used to count as 0 calls.
    #[tokio::test]
    async fn a_failed_call_counts_as_a_call() {
        let mut stats = LlmStats::default();
        let mut transcript = String::new();
        let e = ask_model(
            ModelCall {
                llm: &Down,
                agent_kind: "host",
                retries: 2,
                system: "system".into(),
                user: "user".into(),
                images: Vec::new(),
                schema: None,
            },
            |_| Ok::<(), String>(()),
            &mut stats,
            &mut transcript,
        )
        .await
        .expect_err("the model is down");
        assert!(e.to_string().contains("failed 4 time(s)"), "{e}");
        assert!(
            matches!(e, StepError::Model(_)),
            "the model's error is kept: {e:?}"
        );
        assert_eq!(stats.calls, 1);
        assert_eq!(stats.prompt_tokens, 0);
    }
}
