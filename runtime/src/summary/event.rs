//! TF's `Event` and `Summary` messages (`tensorflow/core/util/event.proto`,
//! `tensorflow/core/framework/summary.proto`): the records of an event file.
//!
//! Owns: the message types ([`Event`], [`What`], [`Summary`],
//! [`SummaryValue`], [`ValueKind`], [`Image`], [`TensorValue`],
//! [`SessionLog`]), their encoding ([`Event::encode`]: fields in number
//! order, proto3 defaults omitted, as TF's serializer writes them) and their
//! decoding ([`Event::decode`]), field numbers as in the `.proto` files.
//!
//! Invariants: decoding never panics on any bytes; unknown fields are
//! skipped (protobuf's rule), and a value kind specc does not model is kept
//! as [`ValueKind::Other`] with its field number rather than refused, so any
//! event file TF or TensorBoard writes can be read through.

use std::fmt;

use super::histogram::HistogramProto;
use crate::io::proto::{self, Encoder, ProtoError, Value};

/// `Event.file_version` of every event file TF writes today.
pub const FILE_VERSION: &str = "brain.Event:2";

/// `SessionLog.status` START: a (re)started run; TensorBoard drops the
/// events of an earlier run at or after this step (orphaned by a crash).
pub const SESSION_LOG_START: i32 = 1;

/// One record of an event file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Event {
    /// Seconds since the Unix epoch.
    pub wall_time: f64,
    /// The global step the event belongs to.
    pub step: i64,
    pub what: What,
    /// `source_metadata.writer`: the program that wrote the file.
    pub source_writer: Option<String>,
}

/// The `oneof what` of an `Event`.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum What {
    #[default]
    Nothing,
    FileVersion(String),
    Summary(Summary),
    SessionLog(SessionLog),
    GraphDef(Vec<u8>),
    MetaGraphDef(Vec<u8>),
    /// Another field of the oneof (log_message, tagged_run_metadata).
    Other(u32),
}

/// `Summary`: a list of tagged values.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub values: Vec<SummaryValue>,
}

/// `Summary.Value`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SummaryValue {
    pub tag: String,
    /// `metadata.plugin_data.plugin_name` (TF2 summaries: `scalars`, `histograms`, ...).
    pub plugin_name: Option<String>,
    pub kind: ValueKind,
}

/// The `oneof value` of a `Summary.Value`.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ValueKind {
    #[default]
    Nothing,
    SimpleValue(f32),
    Histo(HistogramProto),
    Image(Image),
    Tensor(TensorValue),
    /// Another field of the oneof (audio, obsolete histograms).
    Other(u32),
}

/// `Summary.Image`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Image {
    pub height: i32,
    pub width: i32,
    pub colorspace: i32,
    pub encoded: Vec<u8>,
}

/// The parts of a `TensorProto` a summary carries (TF2 scalar summaries:
/// a float scalar).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TensorValue {
    /// TF's `DataType` (1 = float32, 2 = float64).
    pub dtype: i32,
    pub shape: Vec<i64>,
    pub float_val: Vec<f32>,
    pub double_val: Vec<f64>,
    /// `string_val` (a `DT_STRING` tensor: `tf.summary.text`).
    pub string_val: Vec<Vec<u8>>,
    pub tensor_content: Vec<u8>,
}

/// TF's `DT_FLOAT`.
pub const DT_FLOAT: i32 = 1;
/// TF's `DT_DOUBLE`.
pub const DT_DOUBLE: i32 = 2;
/// TF's `DT_STRING`.
pub const DT_STRING: i32 = 7;

impl TensorValue {
    /// The value of a float32 or float64 scalar tensor (`tf.summary.scalar`).
    pub fn scalar(&self) -> Option<f64> {
        if !self.shape.is_empty() {
            return None;
        }
        match self.dtype {
            DT_FLOAT => self.float_val.first().map(|&v| f64::from(v)).or_else(|| {
                let b: [u8; 4] = self.tensor_content.get(..4)?.try_into().ok()?;
                Some(f64::from(f32::from_le_bytes(b)))
            }),
            DT_DOUBLE => self.double_val.first().copied().or_else(|| {
                let b: [u8; 8] = self.tensor_content.get(..8)?.try_into().ok()?;
                Some(f64::from_le_bytes(b))
            }),
            _ => None,
        }
    }
}

/// `SessionLog`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionLog {
    pub status: i32,
    pub checkpoint_path: String,
    pub msg: String,
}

/// A record that is not a well-formed `Event`.
#[derive(Clone, Debug, PartialEq)]
pub struct DecodeError {
    /// The message being decoded (`Event`, `Summary.Value`, ...).
    pub message: &'static str,
    pub error: ProtoError,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not a valid {}: {}", self.message, self.error)
    }
}

impl std::error::Error for DecodeError {}

fn bad(message: &'static str, what: &'static str) -> DecodeError {
    DecodeError {
        message,
        error: ProtoError { offset: 0, what },
    }
}

/// The fields of `bytes`, each passed to `f`; a malformed message is an error
/// naming `message`.
fn each_field<'a>(
    bytes: &'a [u8],
    message: &'static str,
    mut f: impl FnMut(u32, Value<'a>) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    for field in proto::fields(bytes) {
        let (n, v) = field.map_err(|error| DecodeError { message, error })?;
        f(n, v)?;
    }
    Ok(())
}

fn string(v: Value<'_>, message: &'static str) -> Result<String, DecodeError> {
    let b = v
        .as_bytes()
        .ok_or_else(|| bad(message, "a string field of the wrong wire type"))?;
    Ok(String::from_utf8_lossy(b).into_owned())
}

fn field_bytes<'a>(v: Value<'a>, message: &'static str) -> Result<&'a [u8], DecodeError> {
    v.as_bytes()
        .ok_or_else(|| bad(message, "a bytes field of the wrong wire type"))
}

fn int(v: Value<'_>, message: &'static str) -> Result<i64, DecodeError> {
    v.as_u64()
        .map(|u| u as i64)
        .ok_or_else(|| bad(message, "an integer field of the wrong wire type"))
}

fn double(v: Value<'_>, message: &'static str) -> Result<f64, DecodeError> {
    v.as_f64()
        .ok_or_else(|| bad(message, "a double field of the wrong wire type"))
}

impl Event {
    /// Appends the event's serialized bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let mut e = Encoder {
            buf: std::mem::take(out),
        };
        if self.wall_time != 0.0 {
            e.double(1, self.wall_time);
        }
        if self.step != 0 {
            e.int64(2, self.step);
        }
        match &self.what {
            What::Nothing | What::Other(_) => {}
            What::FileVersion(v) => e.bytes(3, v.as_bytes()),
            What::GraphDef(g) => e.bytes(4, g),
            What::Summary(s) => e.message(5, |e| s.encode(e)),
            What::SessionLog(l) => e.message(7, |e| {
                if l.status != 0 {
                    e.int64(1, i64::from(l.status));
                }
                if !l.checkpoint_path.is_empty() {
                    e.bytes(2, l.checkpoint_path.as_bytes());
                }
                if !l.msg.is_empty() {
                    e.bytes(3, l.msg.as_bytes());
                }
            }),
            What::MetaGraphDef(g) => e.bytes(9, g),
        }
        if let Some(w) = &self.source_writer {
            e.message(10, |e| e.bytes(1, w.as_bytes()));
        }
        *out = e.finish();
    }

    /// Decodes one record's payload.
    pub fn decode(buf: &[u8]) -> Result<Event, DecodeError> {
        const M: &str = "Event";
        let mut ev = Event::default();
        each_field(buf, M, |n, v| {
            match n {
                1 => ev.wall_time = double(v, M)?,
                2 => ev.step = int(v, M)?,
                3 => ev.what = What::FileVersion(string(v, M)?),
                4 => ev.what = What::GraphDef(field_bytes(v, M)?.to_vec()),
                5 => ev.what = What::Summary(Summary::decode(field_bytes(v, M)?)?),
                7 => ev.what = What::SessionLog(SessionLog::decode(field_bytes(v, M)?)?),
                9 => ev.what = What::MetaGraphDef(field_bytes(v, M)?.to_vec()),
                6 | 8 => ev.what = What::Other(n),
                10 => {
                    const S: &str = "SourceMetadata";
                    each_field(field_bytes(v, M)?, S, |n, v| {
                        if n == 1 {
                            ev.source_writer = Some(string(v, S)?);
                        }
                        Ok(())
                    })?;
                }
                _ => {}
            }
            Ok(())
        })?;
        Ok(ev)
    }
}

impl Summary {
    fn encode(&self, e: &mut Encoder) {
        for v in &self.values {
            e.message(1, |e| v.encode(e));
        }
    }

    /// Decodes a `Summary` message.
    pub fn decode(buf: &[u8]) -> Result<Summary, DecodeError> {
        let mut s = Summary::default();
        each_field(buf, "Summary", |n, v| {
            if n == 1 {
                s.values
                    .push(SummaryValue::decode(field_bytes(v, "Summary")?)?);
            }
            Ok(())
        })?;
        Ok(s)
    }
}

impl SummaryValue {
    /// A `simple_value` (what `tf.compat.v1.summary.scalar` writes).
    pub fn scalar(tag: &str, value: f32) -> SummaryValue {
        SummaryValue {
            tag: tag.to_string(),
            plugin_name: None,
            kind: ValueKind::SimpleValue(value),
        }
    }

    /// A histogram (what `tf.compat.v1.summary.histogram` writes).
    pub fn histogram(tag: &str, histo: HistogramProto) -> SummaryValue {
        SummaryValue {
            tag: tag.to_string(),
            plugin_name: None,
            kind: ValueKind::Histo(histo),
        }
    }

    /// A text (what `tf.summary.text` writes: a scalar `DT_STRING` tensor
    /// for TensorBoard's `text` plugin, which renders it as Markdown).
    pub fn text(tag: &str, text: &str) -> SummaryValue {
        SummaryValue {
            tag: tag.to_string(),
            plugin_name: Some("text".to_string()),
            kind: ValueKind::Tensor(TensorValue {
                dtype: DT_STRING,
                string_val: vec![text.as_bytes().to_vec()],
                ..TensorValue::default()
            }),
        }
    }

    /// The text of a `tf.summary.text` value.
    pub fn as_text(&self) -> Option<&str> {
        match &self.kind {
            ValueKind::Tensor(t) if t.dtype == DT_STRING && t.shape.is_empty() => {
                std::str::from_utf8(t.string_val.first()?).ok()
            }
            _ => None,
        }
    }

    /// The value as a scalar: a `simple_value`, or a TF2 scalar tensor.
    pub fn as_scalar(&self) -> Option<f64> {
        match &self.kind {
            ValueKind::SimpleValue(v) => Some(f64::from(*v)),
            ValueKind::Tensor(t) => t.scalar(),
            _ => None,
        }
    }

    fn encode(&self, e: &mut Encoder) {
        if !self.tag.is_empty() {
            e.bytes(1, self.tag.as_bytes());
        }
        match &self.kind {
            ValueKind::SimpleValue(v) => e.float(2, *v),
            ValueKind::Image(i) => e.message(4, |e| {
                for (n, x) in [(1, i.height), (2, i.width), (3, i.colorspace)] {
                    if x != 0 {
                        e.int64(n, i64::from(x));
                    }
                }
                if !i.encoded.is_empty() {
                    e.bytes(4, &i.encoded);
                }
            }),
            ValueKind::Histo(h) => e.message(5, |e| encode_histogram(h, e)),
            ValueKind::Tensor(t) => e.message(8, |e| encode_tensor(t, e)),
            ValueKind::Nothing | ValueKind::Other(_) => {}
        }
        if let Some(p) = &self.plugin_name {
            e.message(9, |e| e.message(1, |e| e.bytes(1, p.as_bytes())));
        }
    }

    fn decode(buf: &[u8]) -> Result<SummaryValue, DecodeError> {
        const M: &str = "Summary.Value";
        let mut sv = SummaryValue::default();
        each_field(buf, M, |n, v| {
            match n {
                1 => sv.tag = string(v, M)?,
                2 => {
                    sv.kind = ValueKind::SimpleValue(
                        v.as_f32()
                            .ok_or_else(|| bad(M, "simple_value is not a float"))?,
                    )
                }
                4 => sv.kind = ValueKind::Image(decode_image(field_bytes(v, M)?)?),
                5 => sv.kind = ValueKind::Histo(decode_histogram(field_bytes(v, M)?)?),
                8 => sv.kind = ValueKind::Tensor(decode_tensor(field_bytes(v, M)?)?),
                3 | 6 => sv.kind = ValueKind::Other(n),
                9 => sv.plugin_name = decode_plugin_name(field_bytes(v, M)?)?,
                _ => {}
            }
            Ok(())
        })?;
        Ok(sv)
    }
}

impl SessionLog {
    fn decode(buf: &[u8]) -> Result<SessionLog, DecodeError> {
        const M: &str = "SessionLog";
        let mut l = SessionLog::default();
        each_field(buf, M, |n, v| {
            match n {
                1 => l.status = int(v, M)? as i32,
                2 => l.checkpoint_path = string(v, M)?,
                3 => l.msg = string(v, M)?,
                _ => {}
            }
            Ok(())
        })?;
        Ok(l)
    }
}

fn encode_histogram(h: &HistogramProto, e: &mut Encoder) {
    for (n, x) in [
        (1, h.min),
        (2, h.max),
        (3, h.num),
        (4, h.sum),
        (5, h.sum_squares),
    ] {
        if x.to_bits() != 0 {
            e.double(n, x);
        }
    }
    e.packed_doubles(6, &h.bucket_limit);
    e.packed_doubles(7, &h.bucket);
}

fn decode_histogram(buf: &[u8]) -> Result<HistogramProto, DecodeError> {
    const M: &str = "HistogramProto";
    let mut h = HistogramProto::default();
    each_field(buf, M, |n, v| {
        let packed = |out: &mut Vec<f64>| {
            proto::doubles(v, out).map_err(|error| DecodeError { message: M, error })
        };
        match n {
            1 => h.min = double(v, M)?,
            2 => h.max = double(v, M)?,
            3 => h.num = double(v, M)?,
            4 => h.sum = double(v, M)?,
            5 => h.sum_squares = double(v, M)?,
            6 => packed(&mut h.bucket_limit)?,
            7 => packed(&mut h.bucket)?,
            _ => {}
        }
        Ok(())
    })?;
    Ok(h)
}

fn decode_image(buf: &[u8]) -> Result<Image, DecodeError> {
    const M: &str = "Summary.Image";
    let mut i = Image::default();
    each_field(buf, M, |n, v| {
        match n {
            1 => i.height = int(v, M)? as i32,
            2 => i.width = int(v, M)? as i32,
            3 => i.colorspace = int(v, M)? as i32,
            4 => i.encoded = field_bytes(v, M)?.to_vec(),
            _ => {}
        }
        Ok(())
    })?;
    Ok(i)
}

/// A `TensorProto`: its dtype, shape (a dim per size), and values.
fn encode_tensor(t: &TensorValue, e: &mut Encoder) {
    if t.dtype != 0 {
        e.int64(1, i64::from(t.dtype));
    }
    e.message(2, |e| {
        for &d in &t.shape {
            e.message(2, |e| {
                if d != 0 {
                    e.int64(1, d);
                }
            });
        }
    });
    if !t.tensor_content.is_empty() {
        e.bytes(4, &t.tensor_content);
    }
    for &v in &t.float_val {
        e.float(5, v);
    }
    for &v in &t.double_val {
        e.double(6, v);
    }
    for v in &t.string_val {
        e.bytes(8, v);
    }
}

fn decode_tensor(buf: &[u8]) -> Result<TensorValue, DecodeError> {
    const M: &str = "TensorProto";
    let mut t = TensorValue::default();
    each_field(buf, M, |n, v| {
        match n {
            1 => t.dtype = int(v, M)? as i32,
            2 => each_field(field_bytes(v, M)?, "TensorShapeProto", |n, v| {
                if n == 2 {
                    each_field(field_bytes(v, M)?, "TensorShapeProto.Dim", |n, v| {
                        if n == 1 {
                            t.shape.push(int(v, M)?);
                        }
                        Ok(())
                    })?;
                }
                Ok(())
            })?,
            4 => t.tensor_content = field_bytes(v, M)?.to_vec(),
            5 => proto::floats(v, &mut t.float_val)
                .map_err(|error| DecodeError { message: M, error })?,
            6 => proto::doubles(v, &mut t.double_val)
                .map_err(|error| DecodeError { message: M, error })?,
            8 => t.string_val.push(field_bytes(v, M)?.to_vec()),
            _ => {}
        }
        Ok(())
    })?;
    Ok(t)
}

fn decode_plugin_name(buf: &[u8]) -> Result<Option<String>, DecodeError> {
    let mut name = None;
    each_field(buf, "SummaryMetadata", |n, v| {
        if n == 1 {
            each_field(field_bytes(v, "SummaryMetadata")?, "PluginData", |n, v| {
                if n == 1 {
                    name = Some(string(v, "PluginData")?);
                }
                Ok(())
            })?;
        }
        Ok(())
    })?;
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_round_trip() {
        let events = [
            Event {
                wall_time: 12.0,
                step: 0,
                what: What::FileVersion(FILE_VERSION.into()),
                source_writer: Some("specc".into()),
            },
            Event {
                wall_time: 12.5,
                step: -3,
                what: What::Summary(Summary {
                    values: vec![
                        SummaryValue::scalar("loss", 0.25),
                        SummaryValue::histogram(
                            "W",
                            HistogramProto {
                                min: -1.0,
                                max: 0.0,
                                num: 2.0,
                                sum: -1.0,
                                sum_squares: 1.0,
                                bucket_limit: vec![-0.5, 1e-12],
                                bucket: vec![1.0, 1.0],
                            },
                        ),
                    ],
                }),
                source_writer: None,
            },
            Event {
                wall_time: 13.0,
                step: 7,
                what: What::SessionLog(SessionLog {
                    status: SESSION_LOG_START,
                    ..SessionLog::default()
                }),
                source_writer: None,
            },
        ];
        for ev in events {
            let mut b = Vec::new();
            ev.encode(&mut b);
            assert_eq!(Event::decode(&b).unwrap(), ev);
        }
    }

    #[test]
    fn a_scalar_event_has_tfs_size() {
        // wall_time (9) + step (2) + summary (2 + value (2 + tag (2+4) + float (5))).
        let ev = Event {
            wall_time: 1.5,
            step: 1,
            what: What::Summary(Summary {
                values: vec![SummaryValue::scalar("loss", 1.0)],
            }),
            source_writer: None,
        };
        let mut b = Vec::new();
        ev.encode(&mut b);
        assert_eq!(b.len(), 26);
    }

    #[test]
    fn tf2_scalar_tensors_decode_as_scalars() {
        // Summary.Value{tag, metadata.plugin_data.plugin_name = "scalars",
        // tensor: TensorProto{dtype: DT_FLOAT, tensor_shape: {}, float_val: [2.5]}},
        // as tf.summary.scalar writes it; and a DT_DOUBLE in tensor_content.
        for (dtype, field, bytes) in [
            (DT_FLOAT, 5, 2.5f32.to_le_bytes().to_vec()),
            (DT_DOUBLE, 4, 2.5f64.to_le_bytes().to_vec()),
        ] {
            let mut e = Encoder::new();
            e.double(1, 3.0);
            e.int64(2, 9);
            e.message(5, |e| {
                e.message(1, |e| {
                    e.bytes(1, b"loss");
                    e.message(8, |e| {
                        e.varint(1, dtype as u64);
                        e.message(2, |_| {});
                        e.bytes(field, &bytes);
                    });
                    e.message(9, |e| e.message(1, |e| e.bytes(1, b"scalars")));
                })
            });
            let ev = Event::decode(&e.finish()).unwrap();
            let What::Summary(s) = &ev.what else {
                panic!("{ev:?}")
            };
            assert_eq!(ev.step, 9);
            assert_eq!(s.values[0].tag, "loss");
            assert_eq!(s.values[0].plugin_name.as_deref(), Some("scalars"));
            assert_eq!(s.values[0].as_scalar(), Some(2.5));
        }
    }

    #[test]
    fn malformed_events_are_errors() {
        for bad in [
            &[0x2a, 0x05, 1][..],
            &[0x09, 1, 2],
            &[0x2a, 0x02, 0x0a, 0x07],
        ] {
            assert!(Event::decode(bad).is_err(), "{bad:?}");
        }
    }
}
