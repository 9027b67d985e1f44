//! A PipeWire video stream consumer (docs/desktop.md, "KWin"), free of any compositor: given
//! a node id (KWin's screencast gives one; so does Mutter's ScreenCast), it connects to the
//! session's PipeWire daemon on a thread of its own, takes raw 4-byte RGB video in
//! shared-memory buffers (no DMA-BUF: the pixels are read by the CPU), and keeps the last
//! frame, counted, with the damage the producer reports. Waiters are woken on each frame, and
//! the owner's callback told of it (after the frame is kept: whoever it tells reads a frame at
//! least that new); every wait is bounded, and the thread stops when the stream is dropped.

mod frame;

use std::sync::{mpsc, Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pipewire as pw;
use pw::spa;
use spa::param::format::{FormatProperties, MediaSubtype, MediaType};
use spa::param::video::{VideoFormat, VideoInfoRaw};
use spa::param::ParamType;
use spa::pod::{ChoiceValue, Object, Pod, Property, PropertyFlags, Value};
use spa::utils::{Choice, ChoiceEnum, ChoiceFlags, Id, SpaTypes};
use ufo_core::Rect;

pub(crate) use frame::{Frame, Order};

/// Longest wait for the stream to be created and connected.
const CONNECT_WAIT: Duration = Duration::from_secs(5);
/// Most damage rectangles a frame's metadata carries (more: the whole frame is damaged).
const MOST_DAMAGE: i32 = 16;
/// Size of one `spa_meta_region` (a point and a rectangle: four 32-bit numbers).
const REGION_SIZE: i32 = 16;

/// Why a stream could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StreamError {
    /// PipeWire's daemon or the stream could not be reached.
    #[error("cannot connect to PipeWire ({what}): {source}; is the pipewire daemon running in this session (and WirePlumber, which links streams)?")]
    Connect {
        /// The step that failed.
        what: &'static str,
        /// PipeWire's error.
        source: pw::Error,
    },
    /// The stream's thread could not be started or ended early.
    #[error(
        "the PipeWire stream's thread failed: {0}; the machine may be out of threads or memory"
    )]
    Thread(String),
    /// The stream was not ready in time.
    #[error("the PipeWire stream to node {node} was not connected within {ms} ms; check that the node exists (`pw-cli ls Node`)")]
    Timeout {
        /// The node asked for.
        node: u32,
        /// The bound.
        ms: u64,
    },
}

/// What the stream's thread shares with its readers.
#[derive(Default)]
struct Shared {
    latest: Mutex<Latest>,
    arrived: Condvar,
}

#[derive(Default)]
struct Latest {
    frame: Option<Arc<Frame>>,
    /// frames received so far
    count: u64,
    /// why the stream stopped (an error, or the producer went away)
    ended: Option<String>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Latest> {
        self.latest.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A video stream being consumed: the last frame, and the thread that receives them.
pub(crate) struct VideoStream {
    shared: Arc<Shared>,
    quit: Option<pw::channel::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl VideoStream {
    /// Connect to PipeWire node `node` (a video source) on the session's daemon
    /// (`PIPEWIRE_REMOTE`, else `$XDG_RUNTIME_DIR/pipewire-0`); returns once the stream is
    /// connected (its frames come afterwards). `on_frame` is told of each frame (its number,
    /// whether it changed anything: [`Frame::changed`]) once it is the latest, on the
    /// stream's thread.
    pub(crate) fn connect(node: u32, on_frame: OnFrame) -> Result<VideoStream, StreamError> {
        VideoStream::connect_to(node, None, on_frame)
    }

    /// The same through `remote`, a connection to PipeWire's daemon someone else opened (the
    /// ScreenCast portal's `OpenPipeWireRemote`: it shows this process only the nodes the
    /// person shared); `None`: the session's daemon.
    pub(crate) fn connect_to(
        node: u32,
        remote: Option<std::os::fd::OwnedFd>,
        on_frame: OnFrame,
    ) -> Result<VideoStream, StreamError> {
        let shared = Arc::new(Shared::default());
        let (ready_tx, ready) = mpsc::sync_channel(1);
        let (quit, quit_rx) = pw::channel::channel::<()>();
        let s = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("ufo-pipewire".into())
            .spawn(move || run(node, remote, &s, on_frame, quit_rx, &ready_tx))
            .map_err(|e| StreamError::Thread(e.to_string()))?;
        let stream = VideoStream {
            shared,
            quit: Some(quit),
            thread: Some(thread),
        };
        match ready.recv_timeout(CONNECT_WAIT) {
            Ok(Ok(())) => Ok(stream),
            Ok(Err(e)) => Err(e),
            Err(mpsc::RecvTimeoutError::Timeout) => Err(StreamError::Timeout {
                node,
                ms: CONNECT_WAIT.as_millis() as u64,
            }),
            Err(mpsc::RecvTimeoutError::Disconnected) => Err(StreamError::Thread(
                "it ended before saying whether it connected".into(),
            )),
        }
    }

    /// The last frame, waiting for the first one until `wait` has passed (`None`: none came
    /// in time, or the stream stopped).
    pub(crate) fn first(&self, wait: Duration) -> Option<Arc<Frame>> {
        let deadline = Instant::now() + wait;
        let mut g = self.shared.lock();
        loop {
            if let Some(f) = &g.frame {
                return Some(Arc::clone(f));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if g.ended.is_some() || left.is_zero() {
                return None;
            }
            g = self
                .shared
                .arrived
                .wait_timeout(g, left)
                .map(|(g, _)| g)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }

    /// Why the stream stopped, once it has.
    pub(crate) fn ended(&self) -> Option<String> {
        self.shared.lock().ended.clone()
    }
}

impl Drop for VideoStream {
    // the thread's main loop quits on the message; a stuck daemon cannot hold the caller:
    // the join is skipped when the message cannot be sent
    fn drop(&mut self) {
        let sent = self.quit.take().is_some_and(|q| q.send(()).is_ok());
        if let (true, Some(t)) = (sent, self.thread.take()) {
            let _ = t.join();
        }
    }
}

/// What a stream's owner is told of each frame (its number, whether it changed anything), on
/// the stream's thread.
pub(crate) type OnFrame = Box<dyn Fn(u64, bool) + Send>;

/// What the stream's callbacks keep.
struct Data {
    shared: Arc<Shared>,
    on_frame: OnFrame,
    format: Option<(u32, u32, Order)>,
    /// the buffer the next frame is packed into (the last frame's, when no reader holds it)
    spare: Vec<u8>,
}

/// The daemon: through `remote` when given (a connection the portal opened), else the
/// session's.
fn connect_core(
    context: &pw::context::ContextRc,
    remote: Option<std::os::fd::OwnedFd>,
) -> Result<pw::core::CoreRc, pw::Error> {
    match remote {
        Some(fd) => context.connect_fd_rc(fd, None),
        None => context.connect_rc(None),
    }
}

/// The thread: connect, then run PipeWire's loop until told to quit.
fn run(
    node: u32,
    remote: Option<std::os::fd::OwnedFd>,
    shared: &Arc<Shared>,
    on_frame: OnFrame,
    quit: pw::channel::Receiver<()>,
    ready: &mpsc::SyncSender<Result<(), StreamError>>,
) {
    pw::init();
    let connect = |what| move |source| StreamError::Connect { what, source };
    let main = match pw::main_loop::MainLoopRc::new(None).map_err(connect("main loop")) {
        Ok(m) => m,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let setup = (|| {
        let context = pw::context::ContextRc::new(&main, None).map_err(connect("context"))?;
        let core = connect_core(&context, remote).map_err(connect("daemon"))?;
        let stream = pw::stream::StreamRc::new(
            core,
            "ufo-screen",
            pw::properties::properties! {
                *pw::keys::MEDIA_TYPE => "Video",
                *pw::keys::MEDIA_CATEGORY => "Capture",
                *pw::keys::MEDIA_ROLE => "Screen",
            },
        )
        .map_err(connect("stream"))?;
        let data = Data {
            shared: Arc::clone(shared),
            on_frame,
            format: None,
            spare: Vec::new(),
        };
        let listener = stream
            .add_local_listener_with_user_data(data)
            .state_changed(|_, d, _, new| on_state(d, new))
            .param_changed(on_param)
            .process(on_process)
            .register()
            .map_err(connect("listener"))?;
        let formats = [serialize(&formats_param())];
        let mut params = pods(&formats);
        stream
            .connect(
                spa::utils::Direction::Input,
                Some(node),
                pw::stream::StreamFlags::AUTOCONNECT | pw::stream::StreamFlags::MAP_BUFFERS,
                &mut params,
            )
            .map_err(connect("stream to the node"))?;
        Ok::<_, StreamError>((context, stream, listener))
    })();
    let kept = match setup {
        Ok(k) => k,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let weak = main.downgrade();
    let _attached = quit.attach(main.loop_(), move |()| {
        if let Some(m) = weak.upgrade() {
            m.quit();
        }
    });
    let _ = ready.send(Ok(()));
    main.run();
    let _ = kept.1.disconnect();
    drop(kept);
    let mut g = shared.lock();
    g.ended
        .get_or_insert_with(|| "the stream was closed".into());
    shared.arrived.notify_all();
}

fn on_state(d: &mut Data, new: pw::stream::StreamState) {
    tracing::debug!(state = ?new, "PipeWire stream");
    let why = match new {
        pw::stream::StreamState::Error(e) => format!("PipeWire stream error: {e}"),
        pw::stream::StreamState::Unconnected => "the producer closed the stream".into(),
        _ => return,
    };
    let mut g = d.shared.lock();
    g.ended = Some(why);
    d.shared.arrived.notify_all();
}

/// The format was chosen: take it if it is one ufo reads, and ask for damage metadata and
/// shared-memory buffers.
fn on_param(stream: &pw::stream::Stream, d: &mut Data, id: u32, param: Option<&Pod>) {
    let Some(param) = param else { return };
    if id != ParamType::Format.as_raw() {
        return;
    }
    match spa::param::format_utils::parse_format(param) {
        Ok((MediaType::Video, MediaSubtype::Raw)) => {}
        _ => return,
    }
    let mut info = VideoInfoRaw::new();
    if info.parse(param).is_err() {
        return;
    }
    let size = info.size();
    let name = format_name(info.format());
    d.format = frame::order_of(name).map(|o| (size.width, size.height, o));
    tracing::debug!(
        format = name,
        size.width,
        size.height,
        "PipeWire stream format"
    );
    let wanted = [serialize(&meta_param()), serialize(&buffers_param())];
    let mut params = pods(&wanted);
    if let Err(e) = stream.update_params(&mut params) {
        tracing::debug!("PipeWire stream: buffer parameters refused: {e}");
    }
}

/// A frame came: pack its pixels, note its damage, wake the waiters.
fn on_process(stream: &pw::stream::Stream, d: &mut Data) {
    // only the newest queued buffer matters: older ones are given back unread
    let mut newest = None;
    while let Some(b) = stream.dequeue_buffer() {
        newest = Some(b);
    }
    let Some(mut buffer) = newest else {
        tracing::trace!("PipeWire stream: process without a buffer");
        return;
    };
    let Some((width, height, order)) = d.format else {
        return;
    };
    let damage = buffer
        .find_meta::<spa::buffer::meta::MetaVideoDamage>()
        .map(|m| {
            m.iter()
                .map(|r| {
                    let (p, s) = (r.position(), r.size());
                    Rect::new(p.x, p.y, s.width, s.height)
                })
                .collect::<Vec<_>>()
        });
    let Some(data) = buffer.datas_mut().first_mut() else {
        return;
    };
    let (offset, stride, size) = {
        let c = data.chunk();
        (c.offset() as usize, c.stride(), c.size())
    };
    tracing::trace!(offset, stride, size, kind = ?data.type_(), "PipeWire buffer");
    // an empty chunk is a frame without new pixels (a cursor move, say)
    if size == 0 {
        return;
    }
    let stride = usize::try_from(stride)
        .ok()
        .filter(|s| *s > 0)
        .unwrap_or(width as usize * 4);
    let Some(bytes) = data.data() else {
        tracing::debug!("PipeWire stream: a buffer that is not mapped (DMA-BUF?), skipped");
        return;
    };
    let mut pixels = std::mem::take(&mut d.spare);
    if frame::pack(bytes, offset, stride, width, height, &mut pixels).is_none() {
        tracing::debug!("PipeWire stream: a buffer shorter than its format, skipped");
        d.spare = pixels;
        return;
    }
    drop(buffer);
    let mut g = d.shared.lock();
    g.count += 1;
    let f = Frame {
        seq: g.count,
        width,
        height,
        order,
        pixels,
        damage,
    };
    // the last frame's pixels are reused when no reader holds them any more
    let (seq, changed) = (f.seq, f.changed());
    if let Some(old) = g
        .frame
        .replace(Arc::new(f))
        .and_then(|o| Arc::try_unwrap(o).ok())
    {
        d.spare = old.pixels;
    }
    drop(g);
    d.shared.arrived.notify_all();
    (d.on_frame)(seq, changed);
}

/// SPA's name of a video format, for [`frame::order_of`].
fn format_name(f: VideoFormat) -> &'static str {
    [
        (VideoFormat::BGRx, "BGRx"),
        (VideoFormat::BGRA, "BGRA"),
        (VideoFormat::RGBx, "RGBx"),
        (VideoFormat::RGBA, "RGBA"),
    ]
    .into_iter()
    .find(|(v, _)| *v == f)
    .map_or("other", |(_, n)| n)
}

fn property(key: u32, value: Value) -> Property {
    Property {
        key,
        flags: PropertyFlags::empty(),
        value,
    }
}

/// The formats asked for: raw video, 4-byte RGB in either order, any size and rate.
fn formats_param() -> Object {
    let formats = [
        VideoFormat::BGRx,
        VideoFormat::BGRA,
        VideoFormat::RGBx,
        VideoFormat::RGBA,
    ];
    let id = |f: VideoFormat| Id(f.as_raw());
    Object {
        type_: SpaTypes::ObjectParamFormat.as_raw(),
        id: ParamType::EnumFormat.as_raw(),
        properties: vec![
            property(
                FormatProperties::MediaType.as_raw(),
                Value::Id(Id(MediaType::Video.as_raw())),
            ),
            property(
                FormatProperties::MediaSubtype.as_raw(),
                Value::Id(Id(MediaSubtype::Raw.as_raw())),
            ),
            property(
                FormatProperties::VideoFormat.as_raw(),
                Value::Choice(ChoiceValue::Id(Choice(
                    ChoiceFlags::empty(),
                    ChoiceEnum::Enum {
                        default: id(formats[0]),
                        alternatives: formats.iter().map(|f| id(*f)).collect(),
                    },
                ))),
            ),
            property(
                FormatProperties::VideoSize.as_raw(),
                Value::Choice(ChoiceValue::Rectangle(Choice(
                    ChoiceFlags::empty(),
                    ChoiceEnum::Range {
                        default: spa::utils::Rectangle {
                            width: 1280,
                            height: 800,
                        },
                        min: spa::utils::Rectangle {
                            width: 1,
                            height: 1,
                        },
                        max: spa::utils::Rectangle {
                            width: 16384,
                            height: 16384,
                        },
                    },
                ))),
            ),
            property(
                FormatProperties::VideoFramerate.as_raw(),
                Value::Choice(ChoiceValue::Fraction(Choice(
                    ChoiceFlags::empty(),
                    ChoiceEnum::Range {
                        default: spa::utils::Fraction { num: 0, denom: 1 },
                        min: spa::utils::Fraction { num: 0, denom: 1 },
                        max: spa::utils::Fraction {
                            num: 1000,
                            denom: 1,
                        },
                    },
                ))),
            ),
        ],
    }
}

/// The damage metadata asked for with each buffer.
fn meta_param() -> Object {
    Object {
        type_: SpaTypes::ObjectParamMeta.as_raw(),
        id: ParamType::Meta.as_raw(),
        properties: vec![
            property(
                spa::sys::SPA_PARAM_META_type,
                Value::Id(Id(spa::sys::SPA_META_VideoDamage)),
            ),
            property(
                spa::sys::SPA_PARAM_META_size,
                Value::Choice(ChoiceValue::Int(Choice(
                    ChoiceFlags::empty(),
                    ChoiceEnum::Range {
                        default: REGION_SIZE * MOST_DAMAGE,
                        min: REGION_SIZE,
                        max: REGION_SIZE * MOST_DAMAGE,
                    },
                ))),
            ),
        ],
    }
}

/// Shared-memory buffers only (the CPU reads the pixels).
fn buffers_param() -> Object {
    let mem = (1i32 << spa::sys::SPA_DATA_MemFd) | (1i32 << spa::sys::SPA_DATA_MemPtr);
    Object {
        type_: SpaTypes::ObjectParamBuffers.as_raw(),
        id: ParamType::Buffers.as_raw(),
        properties: vec![property(
            spa::sys::SPA_PARAM_BUFFERS_dataType,
            Value::Choice(ChoiceValue::Int(Choice(
                ChoiceFlags::empty(),
                ChoiceEnum::Flags {
                    default: mem,
                    flags: vec![],
                },
            ))),
        )],
    }
}

/// An object as the bytes of a pod (an object of these fixed types always serializes).
fn serialize(o: &Object) -> Vec<u8> {
    spa::pod::serialize::PodSerializer::serialize(
        std::io::Cursor::new(Vec::new()),
        &Value::Object(o.clone()),
    )
    .map(|(c, _)| c.into_inner())
    .unwrap_or_default()
}

/// The pods of serialized objects (one that is no pod is left out: PipeWire then chooses).
fn pods(bytes: &[Vec<u8>]) -> Vec<&Pod> {
    bytes.iter().filter_map(|b| Pod::from_bytes(b)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parameters_serialize_to_pods() {
        for o in [formats_param(), meta_param(), buffers_param()] {
            let bytes = serialize(&o);
            assert!(!bytes.is_empty(), "{o:?}");
            let p = Pod::from_bytes(&bytes).expect("a pod");
            assert!(p.is_object(), "{o:?}");
        }
        assert_eq!(format_name(VideoFormat::RGBA), "RGBA");
        assert_eq!(format_name(VideoFormat::I420), "other");
    }
}
