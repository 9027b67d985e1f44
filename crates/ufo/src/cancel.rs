//! Ctrl-C for model calls: [`CancellableLlm`] wraps the session's model so the first Ctrl-C
//! also stops a call in flight, with its retries and backoff waits, within a fraction of a
//! second, instead of letting the session wait out every timeout of a hanging server.
//!
//! A call that begins after the Ctrl-C (the step was still observing the window when it came)
//! gets at most [`GRACE`] to answer: a fast model lets that step complete as before ("the step
//! in progress finishes"), a slow or hanging one is cut.
//!
//! The engine (`ufo-core`) sees the cut call as a failed model call; the session, which watches
//! the same flag, then ends CANCELLED (exit 130), not ERROR.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ufo_core::{ChatRequest, ChatResponse, LlmClient, LlmError, Usage};

/// How often a call in flight looks at the Ctrl-C flag.
const POLL: Duration = Duration::from_millis(50);

/// How long a call begun after the Ctrl-C may take before it is cut.
pub const GRACE: Duration = Duration::from_secs(1);

/// The error of a call cut by Ctrl-C (fatal: nothing may retry it or try a backup model).
pub const CANCELLED_MESSAGE: &str =
    "the model call was cancelled by Ctrl-C; the session ends CANCELLED (`ufo resume` continues it)";

/// A model whose calls end as soon as the Ctrl-C flag is set.
pub struct CancellableLlm<'a> {
    inner: &'a dyn LlmClient,
    cancel: Arc<AtomicBool>,
}

impl<'a> CancellableLlm<'a> {
    /// `inner`, cut short once `cancel` is set.
    pub fn new(inner: &'a dyn LlmClient, cancel: Arc<AtomicBool>) -> Self {
        Self { inner, cancel }
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::SeqCst)
    }

    /// Resolves once the flag is set.
    async fn until_cancelled(&self) {
        while !self.cancelled() {
            tokio::time::sleep(POLL).await;
        }
    }
}

#[async_trait]
impl LlmClient for CancellableLlm<'_> {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        if self.cancelled() {
            return match tokio::time::timeout(GRACE, self.inner.complete(request)).await {
                Ok(result) => result,
                Err(_) => Err(LlmError::Fatal(CANCELLED_MESSAGE.into())),
            };
        }
        tokio::select! {
            result = self.inner.complete(request) => result,
            () = self.until_cancelled() => Err(LlmError::Fatal(CANCELLED_MESSAGE.into())),
        }
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }

    fn cost(&self, usage: &Usage) -> f64 {
        self.inner.cost(usage)
    }

    fn take_notes(&self) -> Vec<ufo_core::ModelNote> {
        self.inner.take_notes()
    }

    fn throughput(&self) -> Option<f64> {
        self.inner.throughput()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model that never answers (a hanging server and its retries).
    struct Hangs;

    #[async_trait]
    impl LlmClient for Hangs {
        async fn complete(&self, _r: &ChatRequest) -> Result<ChatResponse, LlmError> {
            std::future::pending().await
        }
        fn describe(&self) -> String {
            "hangs".into()
        }
        fn cost(&self, usage: &Usage) -> f64 {
            usage.prompt_tokens as f64
        }
    }

    /// A model that answers at once.
    struct Answers;

    #[async_trait]
    impl LlmClient for Answers {
        async fn complete(&self, _r: &ChatRequest) -> Result<ChatResponse, LlmError> {
            Ok(ChatResponse {
                text: "{}".into(),
                usage: Usage::default(),
            })
        }
        fn describe(&self) -> String {
            "answers".into()
        }
    }

    #[tokio::test]
    async fn a_fast_call_begun_after_the_flag_still_answers() {
        let llm = CancellableLlm::new(&Answers, Arc::new(AtomicBool::new(true)));
        let r = llm
            .complete(&request())
            .await
            .expect("answered within the grace");
        assert_eq!(r.text, "{}");
    }

    fn request() -> ChatRequest {
        ChatRequest {
            agent: "host".into(),
            messages: vec![],
            json_mode: true,
            response_schema: None,
            max_tokens: None,
        }
    }

    #[tokio::test]
    async fn a_hanging_call_ends_once_the_flag_is_set() {
        let flag = Arc::new(AtomicBool::new(false));
        let llm = CancellableLlm::new(&Hangs, flag.clone());
        let setter = {
            let flag = flag.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                flag.store(true, Ordering::SeqCst);
            })
        };
        let r = tokio::time::timeout(Duration::from_secs(10), llm.complete(&request()))
            .await
            .expect("the call ended after the flag was set");
        assert!(
            matches!(&r, Err(LlmError::Fatal(m)) if m == CANCELLED_MESSAGE),
            "{r:?}"
        );
        let _ = setter.await;
        // A call begun after the Ctrl-C that does not answer within the grace is cut too.
        let started = std::time::Instant::now();
        let r = tokio::time::timeout(Duration::from_secs(10), llm.complete(&request()))
            .await
            .expect("the late call ended after the grace");
        assert!(r.is_err() && started.elapsed() >= GRACE, "{r:?}");
        // The wrapper is transparent otherwise.
        assert_eq!(llm.describe(), "hangs");
        let usage = Usage {
            prompt_tokens: 7,
            ..Usage::default()
        };
        assert_eq!(llm.cost(&usage), 7.0);
    }
}
