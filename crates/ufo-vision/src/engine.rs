//! One Tesseract engine (libtesseract through `tesseract-plumbing`), with Debian's English
//! model. An engine is `Send` but not `Sync`: each thread keeps its own ([`with_engine`]).

use std::cell::RefCell;
use std::ffi::CString;
use std::path::PathBuf;

use tesseract_plumbing::TessBaseApi;
use ufo_core::vision::DetectError;

use crate::pixels::Gray;
use crate::tsv::{parse_tsv, TsvWord};

/// Where Debian's `tesseract-ocr-eng` puts the model (libtesseract 5's default data path).
pub const DEBIAN_TESSDATA: &str = "/usr/share/tesseract-ocr/5/tessdata";

/// The page segmentation modes used (Tesseract's numbers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segmentation {
    /// 11: sparse text, in no order: a UI screenshot's scattered labels.
    Sparse,
    /// 7: one line: a button's label, a display.
    Line,
    /// 6: one block of text: a region of several lines.
    Block,
}

impl Segmentation {
    fn code(self) -> u32 {
        match self {
            Self::Sparse => 11,
            Self::Line => 7,
            Self::Block => 6,
        }
    }
}

/// The directory holding `eng.traineddata`: `TESSDATA_PREFIX` when set (Tesseract's own
/// override), else Debian's.
pub fn tessdata_dir() -> PathBuf {
    std::env::var_os("TESSDATA_PREFIX")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEBIAN_TESSDATA))
}

/// The error for a missing model at `dir`.
fn missing_model(dir: &std::path::Path) -> DetectError {
    DetectError::Missing {
        what: format!(
            "the English model {}",
            dir.join("eng.traineddata").display()
        ),
        install: "the Debian package tesseract-ocr-eng (or set TESSDATA_PREFIX to the \
                  directory holding eng.traineddata)"
            .into(),
    }
}

/// A ready engine: model loaded (65–110 ms and about 15 MB, so made once per thread).
pub struct Engine {
    api: TessBaseApi,
}

impl Engine {
    /// Load the English model. Fails with [`DetectError::Missing`] naming the package when
    /// the model is not installed.
    pub fn new() -> Result<Self, DetectError> {
        let dir = tessdata_dir();
        if !dir.join("eng.traineddata").is_file() {
            return Err(missing_model(&dir));
        }
        let path = CString::new(dir.to_string_lossy().as_bytes()).map_err(|_| {
            DetectError::Engine(format!(
                "the model directory {} holds a NUL byte; set TESSDATA_PREFIX to a plain path",
                dir.display()
            ))
        })?;
        let mut api = TessBaseApi::create();
        api.init_2(Some(path.as_c_str()), Some(c"eng"))
            .map_err(|_| missing_model(&dir))?;
        // Tesseract prints statistics of empty images on stderr, which is ufo's console.
        api.set_variable(c"debug_file", c"/dev/null")
            .map_err(|_| DetectError::Engine("Tesseract refused debug_file".into()))?;
        Ok(Self { api })
    }

    /// The words Tesseract reads in `img`, an image scaled `scale` times whose (0, 0) lies at
    /// `offset` in the caller's pixels: boxes come back in the caller's pixels.
    pub fn read(
        &mut self,
        img: &Gray,
        mode: Segmentation,
        scale: u32,
        offset: (i32, i32),
    ) -> Result<Vec<TsvWord>, DetectError> {
        let (w, h) = (
            i32::try_from(img.w).map_err(|_| too_big(img))?,
            i32::try_from(img.h).map_err(|_| too_big(img))?,
        );
        self.api.set_page_seg_mode(mode.code());
        self.api
            .set_image(&img.px, w, h, 1, w)
            .map_err(|e| DetectError::Engine(format!("Tesseract refused the image: {e}")))?;
        // The source resolution: 96 dpi screens, scaled; else Tesseract guesses and warns.
        self.api
            .set_source_resolution(96 * i32::try_from(scale.max(1)).unwrap_or(1));
        self.api
            .recognize()
            .map_err(|_| DetectError::Engine("Tesseract could not recognise the image".into()))?;
        let tsv = self
            .api
            .get_tsv_text(0)
            .map_err(|_| DetectError::Engine("Tesseract gave no TSV output".into()))?;
        Ok(parse_tsv(&tsv.as_ref().to_string_lossy(), scale, offset))
    }
}

fn too_big(img: &Gray) -> DetectError {
    DetectError::BadImage(format!(
        "a {}x{} image is too large for Tesseract; read a smaller region",
        img.w, img.h
    ))
}

thread_local! {
    /// This thread's engine, made on first use and kept for the thread's life.
    static ENGINE: RefCell<Option<Engine>> = const { RefCell::new(None) };
}

/// Run `f` with this thread's engine, making it first if needed.
pub fn with_engine<T>(
    f: impl FnOnce(&mut Engine) -> Result<T, DetectError>,
) -> Result<T, DetectError> {
    ENGINE.with(|cell| {
        let mut slot = cell.try_borrow_mut().map_err(|_| {
            DetectError::Engine("the engine of this thread is already reading".into())
        })?;
        if slot.is_none() {
            *slot = Some(Engine::new()?);
        }
        match slot.as_mut() {
            Some(engine) => f(engine),
            None => Err(DetectError::Engine("no engine could be made".into())),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_model_names_the_package() {
        let e = missing_model(std::path::Path::new("/nowhere"));
        let text = e.to_string();
        assert!(text.contains("/nowhere/eng.traineddata"), "{text}");
        assert!(text.contains("tesseract-ocr-eng"), "{text}");
    }
}
