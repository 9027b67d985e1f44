//! Indexing into a new file and swapping it in whole: [`Store::fresh_copy`] copies the store
//! (`VACUUM INTO`, with its vectors to reuse) and [`Store::replace`] renames the copy over it
//! once the index is complete.

use std::path::{Path, PathBuf};

use rusqlite::params;

use super::{Store, StoreError};

impl Store {
    /// A copy of this store in a new file beside it (`FILE.new`, replaced if there), to index
    /// into: [`Store::replace`] puts it in this store's place once the index is complete, so
    /// the store is never left half-written. Vectors made before are in the copy, to reuse.
    pub fn fresh_copy(&self) -> Result<Store, StoreError> {
        let new = new_path(&self.path);
        for p in [new.clone(), wal_path(&new, "-wal"), wal_path(&new, "-shm")] {
            if p.exists() {
                std::fs::remove_file(&p).map_err(|source| StoreError::Dir {
                    path: p.display().to_string(),
                    source,
                })?;
            }
        }
        self.conn
            .execute("VACUUM INTO ?1", params![new.display().to_string()])
            .map_err(|e| self.err(e))?;
        let mut copy = Store::open(&new)?;
        copy.weights = self.weights;
        copy.embedder = self.embedder.clone();
        Ok(copy)
    }

    /// Put this store (made by [`Store::fresh_copy`] of `old`) in `old`'s place: its journal
    /// is folded into its file, then the file is renamed over the old one (an atomic rename on
    /// one file system; a process that has the old file open goes on reading it).
    pub fn replace(self, old: Store) -> Result<Store, StoreError> {
        let target = old.path.clone();
        let err = |path: &Path, source| StoreError::Dir {
            path: path.display().to_string(),
            source,
        };
        self.conn
            .pragma_update(None, "journal_mode", "DELETE")
            .map_err(|e| self.err(e))?;
        let (from, weights, embedder) = (self.path.clone(), self.weights, self.embedder.clone());
        drop(self);
        drop(old);
        for suffix in ["-wal", "-shm"] {
            let p = wal_path(&target, suffix);
            if p.exists() {
                std::fs::remove_file(&p).map_err(|e| err(&p, e))?;
            }
        }
        std::fs::rename(&from, &target).map_err(|e| err(&target, e))?;
        let mut st = Store::open(&target)?;
        st.weights = weights;
        st.embedder = embedder;
        Ok(st)
    }
}

fn new_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".new");
    PathBuf::from(s)
}

fn wal_path(p: &Path, suffix: &str) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{calc_pages, embedder, fake, store, top3};
    use super::super::*;
    use super::new_path;

    #[test]
    fn indexing_again_into_a_copy_reuses_vectors_of_unchanged_pages_and_swaps_whole() {
        use std::sync::atomic::Ordering::SeqCst;
        let query = "highlight negative numbers in red";
        let (url, requests) = fake::server(false);
        let (dir, mut s) = store();
        s.set_embedder(Some(embedder(&url, 5_000)));
        s.save(&calc_pages()).unwrap();
        let first = requests.load(SeqCst);
        assert_eq!(first, 1, "one batch of documents");
        // the same pages again, into a copy: no document is embedded again
        let mut copy = s.fresh_copy().unwrap();
        let file = dir.path().join("ufo").join(FILE_NAME);
        let new = new_path(&file);
        assert!(new.is_file());
        copy.save(&calc_pages()).unwrap();
        assert_eq!(requests.load(SeqCst), first);
        // one page changed: only it is embedded
        let mut pages = calc_pages();
        pages[0].page.body.push_str(" Also for dates.");
        copy.save(&pages).unwrap();
        assert_eq!(requests.load(SeqCst), first + 1);
        // the original is untouched until the swap
        assert_eq!(s.stats().unwrap().documents, pages.len() as u64);
        let s = copy.replace(s).unwrap();
        assert!(!new.exists());
        assert_eq!(s.path(), file);
        assert!(top3(&s, query).contains(&"/h/cond.html".to_string()));
        // and a copy dropped before its swap leaves the store as it was
        let mut copy = s.fresh_copy().unwrap();
        copy.forget(&Forget {
            source: Some("test".into()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(copy.stats().unwrap().documents, 0);
        drop(copy);
        let again = Store::open(&file).unwrap();
        assert_eq!(again.stats().unwrap().documents, pages.len() as u64);
    }
}
