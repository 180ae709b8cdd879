//! The slice keys against bytes derived by hand from OrderedCode's rules
//! (and seen in an index TF 2.21's Saver wrote), the `TensorSliceProto`
//! bytes, and row reads across slice boundaries from several slicings.

use super::*;
use crate::checkpoint::bundle::write_partitioned_bundle;
use crate::checkpoint::CheckpointErrorKind;

/// A fresh directory under the system's temporary one, removed on drop.
struct Dir(std::path::PathBuf);

impl Dir {
    fn new(name: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("specc-slices-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn signed(v: i64) -> Vec<u8> {
    let mut out = Vec::new();
    write_signed_num_increasing(&mut out, v);
    out
}

#[test]
fn num_increasing_is_a_length_byte_then_big_endian() {
    let enc = |v| {
        let mut out = Vec::new();
        write_num_increasing(&mut out, v);
        out
    };
    assert_eq!(enc(0), [0x00]);
    assert_eq!(enc(2), [0x01, 0x02]);
    assert_eq!(enc(300), [0x02, 0x01, 0x2c]);
    assert_eq!(
        enc(u64::MAX),
        [8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
    );
}

#[test]
fn signed_num_increasing_matches_the_rules() {
    // One byte for [-64, 64): 0x80 xor the value.
    assert_eq!(signed(0), [0x80]);
    assert_eq!(signed(3), [0x83]);
    assert_eq!(signed(63), [0xbf]);
    assert_eq!(signed(-1), [0x7f]);
    assert_eq!(signed(-64), [0x40]);
    // Two bytes: header bits 110 (non-negative) / 001 (negative).
    assert_eq!(signed(64), [0xc0, 0x40]);
    assert_eq!(signed(-65), [0x3f, 0xbf]);
    // ordered_code.cc's own examples.
    assert_eq!(signed(0x424242), [0xf0, 0x42, 0x42, 0x42]);
    assert_eq!(signed(-0x800), [0x38, 0x00]);
    // Nine and ten bytes.
    assert_eq!(signed(1 << 55), [0xff, 0x80, 0x80, 0, 0, 0, 0, 0, 0]);
    assert_eq!(
        signed(i64::MAX),
        [0xff, 0xc0, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
    );
    assert_eq!(signed(i64::MIN), [0x00, 0x3f, 0x80, 0, 0, 0, 0, 0, 0, 0]);
}

#[test]
fn signed_num_increasing_round_trips_and_keeps_order() {
    let mut values = vec![i64::MIN, i64::MIN + 1, i64::MAX, i64::MAX - 1, 0, -1, 1];
    for shift in 0..63 {
        for v in [1i64 << shift, (1i64 << shift) - 1, (1i64 << shift) + 1] {
            values.push(v);
            values.push(-v);
        }
    }
    values.sort();
    values.dedup();
    let encoded: Vec<Vec<u8>> = values.iter().map(|&v| signed(v)).collect();
    for (v, e) in values.iter().zip(&encoded) {
        let mut src = e.as_slice();
        assert_eq!(read_signed_num_increasing(&mut src), Some(*v), "{v}");
        assert!(src.is_empty());
    }
    assert!(encoded.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn slice_keys_are_tfs() {
    // `W` [7, 3] in 3 partitions, the first: rows 0..3. TF 2.21's Saver
    // wrote exactly these key bytes.
    let w = TensorSlice::rows(&[7, 3], 0..3);
    let key = encode_tensor_name_slice("W", &w);
    assert_eq!(
        key,
        [0x00, b'W', 0x00, 0x01, 0x01, 0x02, 0x80, 0x83, 0x80, 0x83]
    );
    // `V` [5] in 2 partitions, the second: rows 3..5.
    let v = TensorSlice::rows(&[5], 3..5);
    assert_eq!(
        encode_tensor_name_slice("V", &v),
        [0x00, b'V', 0x00, 0x01, 0x01, 0x01, 0x83, 0x82]
    );
    // A whole dimension is start 0, length -1; a 0 byte in the name is
    // escaped.
    let full = TensorSlice {
        extents: vec![
            Extent {
                start: 70,
                length: Some(2),
            },
            Extent {
                start: 0,
                length: None,
            },
        ],
    };
    assert_eq!(
        encode_tensor_name_slice("a\0b", &full),
        [0x00, b'a', 0x00, 0xff, b'b', 0x00, 0x01, 0x01, 0x02, 0xc0, 0x46, 0x82, 0x80, 0x7f]
    );
    assert_eq!(
        decode_tensor_name_slice(&encode_tensor_name_slice("a\0b", &full)),
        Some(("a\0b".to_string(), full))
    );
    assert_eq!(decode_tensor_name_slice(&key), Some(("W".to_string(), w)));
    assert_eq!(decode_tensor_name_slice(b"W"), None);
}

#[test]
fn slice_protos_are_tfs() {
    // As in TF's index: rows 3..5 of [7, 3] is {start 3, length 2},
    // {length 3}.
    let s = TensorSlice::rows(&[7, 3], 3..5);
    assert_eq!(
        s.encode(),
        [0x0a, 0x04, 0x08, 0x03, 0x10, 0x02, 0x0a, 0x02, 0x10, 0x03]
    );
    assert_eq!(TensorSlice::decode(&s.encode()).unwrap(), s);
    assert_eq!(s.text(), "3,2:0,3");
    assert_eq!(s.bounds(&[7, 3]).unwrap(), [(3, 2), (0, 3)]);
    assert!(s.bounds(&[4, 3]).is_err());
}

/// `[rows, 3]` with value `100 * row + column`.
fn table(rows: usize) -> (Vec<usize>, Vec<f32>) {
    let v = (0..rows * 3)
        .map(|i| (100 * (i / 3) + i % 3) as f32)
        .collect();
    (vec![rows, 3], v)
}

fn saved(dir: &std::path::Path, parts: &[usize]) -> BundleReader {
    let (shape, values) = table(parts.iter().sum());
    let prefix = dir.join(format!("ckpt-{}", parts.len()));
    let t = TensorRef::f32(&shape, &values).unwrap();
    let partitions: Partitions = [("W".to_string(), parts.to_vec())].into();
    write_partitioned_bundle(&prefix, &[("W", t), ("b", t)], &partitions).unwrap();
    BundleReader::open(&prefix).unwrap()
}

#[test]
fn a_partitioned_tensor_reads_back_from_any_rows() {
    let dir = Dir::new("reads");
    for parts in [
        vec![7],
        vec![3, 2, 2],
        vec![1, 1, 1, 1, 1, 1, 1],
        vec![4, 3],
    ] {
        let r = saved(dir.path(), &parts);
        // One logical variable, full shape; slices only when partitioned.
        let names: Vec<_> = r.list_variables();
        assert_eq!(
            names,
            [
                ("W".to_string(), DType::Float, vec![7, 3]),
                ("b".to_string(), DType::Float, vec![7, 3])
            ]
        );
        assert_eq!(
            r.slices("W").len(),
            if parts.len() > 1 { parts.len() } else { 0 }
        );
        let (_, want) = table(7);
        let mut all = vec![0f32; 21];
        r.load_f32_into("W", &mut all).unwrap();
        assert_eq!(all, want);
        for lo in 0..7 {
            for hi in lo..=7 {
                let mut dst = vec![-1f32; (hi - lo) * 3];
                r.load_rows_f32_into("W", lo..hi, &mut dst).unwrap();
                assert_eq!(dst, want[lo * 3..hi * 3], "{parts:?} rows {lo}..{hi}");
                r.load_rows_f32_into("b", lo..hi, &mut dst).unwrap();
                assert_eq!(dst, want[lo * 3..hi * 3]);
            }
        }
        let e = r.load_rows_f32_into("W", 5..8, &mut [0.0; 9]).unwrap_err();
        assert_eq!(e.kind, CheckpointErrorKind::Mismatch);
    }
}

#[test]
fn a_slice_of_another_axis_reads_back() {
    // A slicing along axis 1 (TF's `fixed_size_partitioner(axis=1)`),
    // written entry by entry as TF's AddSlice would.
    let dir = Dir::new("axis");
    let prefix = dir.path().join("cols");
    let (shape, values) = table(4);
    let mut pieces = Vec::new();
    let mut slices = Vec::new();
    for (start, len) in [(0usize, 2usize), (2, 1)] {
        let part: Vec<f32> = (0..4)
            .flat_map(|r| values[r * 3 + start..r * 3 + start + len].to_vec())
            .collect();
        let slice = TensorSlice {
            extents: vec![
                Extent {
                    start: 0,
                    length: None,
                },
                Extent {
                    start: start as i64,
                    length: Some(len as i64),
                },
            ],
        };
        pieces.push((encode_tensor_name_slice("W", &slice), vec![4, len], part));
        slices.push(slice);
    }
    pieces.sort_by(|a, b| a.0.cmp(&b.0));
    let mut data = Vec::new();
    let mut kv = Vec::new();
    for (key, shape, part) in &pieces {
        let bytes: &[u8] = bytemuck::cast_slice(part);
        let e = BundleEntry {
            dtype: DType::Float,
            shape: shape.clone(),
            shard_id: 0,
            offset: data.len() as u64,
            size: bytes.len() as u64,
            crc32c: crc::masked_crc32c(bytes),
            slices: Vec::new(),
        };
        data.extend_from_slice(bytes);
        kv.push((key.clone(), e.encode()));
    }
    kv.push((
        b"W".to_vec(),
        BundleEntry::sliced(DType::Float, shape.clone(), slices).encode(),
    ));
    let header = crate::checkpoint::bundle::encode_header(1);
    let keys = std::iter::once(&b""[..]).chain(kv.iter().map(|(k, _)| k.as_slice()));
    let vals = std::iter::once(&header[..]).chain(kv.iter().map(|(_, v)| v.as_slice()));
    std::fs::write(
        crate::checkpoint::index_path(&prefix),
        crate::checkpoint::table::build(keys.zip(vals)),
    )
    .unwrap();
    std::fs::write(crate::checkpoint::data_path(&prefix, 0, 1), &data).unwrap();
    let r = BundleReader::open(&prefix).unwrap();
    let mut dst = vec![0f32; 6];
    r.load_rows_f32_into("W", 1..3, &mut dst).unwrap();
    assert_eq!(dst, values[3..9]);
    let mut all = vec![0f32; 12];
    r.load_f32_into("W", &mut all).unwrap();
    assert_eq!(all, values);
}

#[test]
fn a_corrupt_slice_is_named() {
    let dir = Dir::new("corrupt");
    saved(dir.path(), &[3, 2, 2]);
    let prefix = dir.path().join("ckpt-3");
    let data = crate::checkpoint::data_path(&prefix, 0, 1);
    let mut bytes = std::fs::read(&data).unwrap();
    // The slices come first (their keys start with 0): damage the second.
    bytes[3 * 12 + 4] ^= 1;
    std::fs::write(&data, bytes).unwrap();
    let r = BundleReader::open(&prefix).unwrap();
    let mut dst = vec![0f32; 3];
    // Rows outside the damaged slice still read.
    r.load_rows_f32_into("W", 0..1, &mut dst).unwrap();
    let e = r.load_rows_f32_into("W", 3..4, &mut dst).unwrap_err();
    assert_eq!(e.kind, CheckpointErrorKind::Corrupt);
    assert!(e.to_string().contains("W (slice 3,2:0,3)"), "{e}");
}

#[test]
fn sharded_writes_merge_into_one_index() {
    use crate::checkpoint::sharded::{write_shard, write_sharded_index, ShardSlice};
    let dir = Dir::new("sharded");
    let prefix = dir.path().join("model.ckpt-5");
    let (shape, values) = table(5);
    let step = [5i64];
    // Rank 0: rows 0..3 and the step; rank 1: rows 3..5.
    let t0 = TensorRef::f32(&[3, 3], &values[..9]).unwrap();
    let t1 = TensorRef::f32(&[2, 3], &values[9..]).unwrap();
    let s = TensorRef::i64(&[], &step).unwrap();
    let e0 = write_shard(
        &prefix,
        0,
        2,
        &[
            ShardSlice {
                name: "W",
                full_shape: &shape,
                rows: 0..3,
                values: t0,
            },
            ShardSlice {
                name: "global_step",
                full_shape: &[],
                rows: 0..0,
                values: s,
            },
        ],
    )
    .unwrap();
    let one = ShardSlice {
        name: "W",
        full_shape: &shape,
        rows: 3..5,
        values: t1,
    };
    let e1 = write_shard(&prefix, 1, 2, std::slice::from_ref(&one)).unwrap();
    // A gap is refused.
    let gap = write_shard(
        dir.path().join("gap"),
        0,
        1,
        &[ShardSlice { rows: 2..4, ..one }],
    )
    .unwrap();
    assert!(write_sharded_index(dir.path().join("gap"), &[gap]).is_err());
    write_sharded_index(&prefix, &[e0, e1]).unwrap();
    let r = BundleReader::open(&prefix).unwrap();
    assert_eq!(r.list_variables().len(), 2);
    let mut all = vec![0f32; 15];
    r.load_f32_into("W", &mut all).unwrap();
    assert_eq!(all, values);
    let mut mid = vec![0f32; 6];
    r.load_rows_f32_into("W", 2..4, &mut mid).unwrap();
    assert_eq!(mid, values[6..12]);
    assert_eq!(r.entry("W").unwrap().slices.len(), 2);
}

#[test]
fn a_managers_sharded_save_lists_the_checkpoint_and_sweeps_old_ones() {
    use crate::checkpoint::sharded::{write_shard, ShardSlice};
    use crate::checkpoint::CheckpointManager;
    let dir = Dir::new("manager");
    let mut m = CheckpointManager::new(dir.path(), Some(1), None).unwrap();
    let (shape, values) = table(4);
    for step in [1i64, 2] {
        let prefix = m.prefix_for(step);
        let entries: Vec<_> = [(0u32, 0..1usize), (1, 1..4)]
            .into_iter()
            .map(|(rank, rows)| {
                let part = &values[rows.start * 3..rows.end * 3];
                let sub = [rows.len(), 3];
                let t = TensorRef::f32(&sub, part).unwrap();
                let one = ShardSlice {
                    name: "W",
                    full_shape: &shape,
                    rows,
                    values: t,
                };
                write_shard(&prefix, rank, 2, &[one]).unwrap()
            })
            .collect();
        assert_eq!(m.save_sharded(step, &entries).unwrap(), prefix);
    }
    let latest = crate::checkpoint::latest_checkpoint(dir.path())
        .unwrap()
        .unwrap();
    assert_eq!(latest, m.prefix_for(2));
    let r = BundleReader::open(&latest).unwrap();
    let mut all = vec![0f32; 12];
    r.load_f32_into("W", &mut all).unwrap();
    assert_eq!(all, values);
    // max_to_keep 1: the first checkpoint's index and both shards are gone.
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("model.ckpt-1."))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
