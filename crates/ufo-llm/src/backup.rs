//! A primary model with a backup (UFO's `BACKUP_AGENT`): when the primary is unreachable
//! after its own retries ([`LlmError::Unavailable`]), the same request goes to the backup.
//! A fatal error of the primary (bad key, script mismatch) is returned as is: the backup
//! would not fix the configuration.

use async_trait::async_trait;
use ufo_core::ports::{ChatRequest, ChatResponse, LlmClient, LlmError};

/// A primary model and its backup; see the [module documentation](self).
pub struct BackupModel {
    primary: Box<dyn LlmClient>,
    backup: Box<dyn LlmClient>,
}

impl std::fmt::Debug for BackupModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.describe())
    }
}

impl BackupModel {
    /// Ask `primary`, and `backup` when the primary is unavailable.
    pub fn new(primary: Box<dyn LlmClient>, backup: Box<dyn LlmClient>) -> Self {
        Self { primary, backup }
    }
}

#[async_trait]
impl LlmClient for BackupModel {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        match self.primary.complete(request).await {
            Err(LlmError::Unavailable(primary)) => {
                tracing::warn!(
                    primary = %self.primary.describe(),
                    backup = %self.backup.describe(),
                    "primary model unavailable, asking the backup: {primary}"
                );
                match self.backup.complete(request).await {
                    Err(LlmError::Unavailable(backup)) => Err(LlmError::Unavailable(format!(
                        "{primary}; backup {}: {backup}",
                        self.backup.describe()
                    ))),
                    other => other,
                }
            }
            other => other,
        }
    }

    fn take_notes(&self) -> Vec<ufo_core::ModelNote> {
        let mut notes = self.primary.take_notes();
        notes.extend(self.backup.take_notes());
        notes
    }

    fn throughput(&self) -> Option<f64> {
        self.primary
            .throughput()
            .or_else(|| self.backup.throughput())
    }

    fn describe(&self) -> String {
        format!(
            "{} (backup: {})",
            self.primary.describe(),
            self.backup.describe()
        )
    }
}
