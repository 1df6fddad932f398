//! A file written atomically: [`PendingFile::create`] makes a temporary file beside the target
//! before any work is done (so an unwritable path fails at once), [`PendingFile::commit`] writes,
//! syncs and renames it over the target. Until then the target is untouched, and a `PendingFile`
//! dropped without a successful commit removes its temporary file. Captures and traces use it.

use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::{Path, PathBuf};

/// A target and the temporary file that will replace it.
///
/// # Examples
///
/// ```
/// use std::io::Write as _;
/// use vkhip::pending::PendingFile;
///
/// let dir = std::env::temp_dir().join(format!("vkhip-pending-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let target = dir.join("out.txt");
/// std::fs::write(&target, "old").unwrap();
///
/// // Dropped without a commit: the target is untouched and no temporary file is left.
/// let pending = PendingFile::create(&target).unwrap();
/// drop(pending);
/// assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
/// assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
///
/// // Committed: the new contents replace the target in one rename.
/// let pending = PendingFile::create(&target).unwrap();
/// assert_eq!(pending.path(), target.as_path());
/// pending.commit(|w| w.write_all(b"new"), |e| e).unwrap();
/// assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
/// assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
///
/// // An unwritable path fails at create time, before any work.
/// assert!(PendingFile::create(&dir.join("missing").join("x")).is_err());
/// assert_eq!(PendingFile::create(&dir).unwrap_err(), "it is a directory");
/// std::fs::remove_dir_all(&dir).unwrap();
/// ```
#[derive(Debug)]
pub struct PendingFile {
    path: PathBuf,
    tmp: PathBuf,
    file: Option<File>,
}

impl PendingFile {
    /// Check that `path` can be written (not a directory, its directory exists and takes a new
    /// file) by creating the temporary file. The error says what is wrong, without the path.
    pub fn create(path: &Path) -> Result<Self, String> {
        let name = path.file_name().ok_or_else(|| "not a file name".to_string())?;
        if path.is_dir() {
            return Err("it is a directory".into());
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(format!("directory {} does not exist", dir.display()));
        }
        let tmp = dir.join(format!(".{}.vkhip-{}.tmp", name.to_string_lossy(), std::process::id()));
        let file = File::options()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| format!("cannot create a file in {}: {e}", dir.display()))?;
        Ok(PendingFile { path: path.to_path_buf(), tmp, file: Some(file) })
    }

    /// The target path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write the contents with `write` (buffered), sync, and rename over the target. `io` turns
    /// an I/O error of the flush, sync or rename into the caller's error type.
    pub fn commit<E>(
        mut self,
        write: impl FnOnce(&mut BufWriter<File>) -> Result<(), E>,
        io: impl Fn(std::io::Error) -> E,
    ) -> Result<(), E> {
        let file = self.file.take().ok_or_else(|| io(std::io::Error::other("already committed")))?;
        let mut out = BufWriter::new(file);
        write(&mut out)?;
        out.flush().map_err(&io)?;
        let file = out.into_inner().map_err(|e| io(e.into_error()))?;
        file.sync_all().map_err(&io)?;
        drop(file);
        std::fs::rename(&self.tmp, &self.path).map_err(io)
    }
}

impl Drop for PendingFile {
    fn drop(&mut self) {
        // After a successful rename the temporary name no longer exists; otherwise it goes.
        if let Err(e) = std::fs::remove_file(&self.tmp) {
            if e.kind() != std::io::ErrorKind::NotFound {
                log::warn!("could not remove {}: {e}", self.tmp.display());
            }
        }
    }
}
