//! Tests of `io::tensor`: the bytes and values below are what TF 2.21's
//! `tf.io.serialize_tensor` and `tf.io.decode_raw` gave (run by hand;
//! `interop/test_sequence_example.py` checks random ones).

use super::super::proto::Encoder;
use super::*;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn serialized(dtype: TensorDType, dims: &[usize], values: &[f64]) -> Vec<u8> {
    let mut out = vec![0xaa; 3];
    serialize_tensor_into(dtype, dims, values.iter().copied(), &mut out);
    out
}

#[test]
fn serialize_tensor_is_tfs_bytes() {
    let cases: [(TensorDType, &[usize], &[f64], &str); 6] = [
        (
            T::Float32,
            &[2, 3],
            &[1.5, 2.0, 3.0, 4.0, 5.0, 6.0],
            "08011208120208021202080322180000c03f0000004000004040000080400000a0400000c040",
        ),
        (T::Int64, &[], &[3.0], "0809120022080300000000000000"),
        (T::Float32, &[0], &[], "080112021200"),
        (T::Bool, &[2], &[1.0, 0.0], "080a12041202080222020100"),
        (T::UInt8, &[2], &[1.0, 2.0], "080412041202080222020102"),
        (
            T::Float16,
            &[2],
            &[1.0, 2.0],
            "08131204120208022204003c0040",
        ),
    ];
    for (dtype, dims, values, want) in cases {
        let bytes = serialized(dtype, dims, values);
        assert_eq!(bytes, hex(want), "{dtype:?} {dims:?}");
        let t = parse_tensor(&bytes, dtype).unwrap();
        assert_eq!((t.dims.as_slice(), t.values.as_slice()), (dims, values));
    }
}

#[test]
fn parse_tensor_refuses_another_dtype_and_garbage() {
    let bytes = serialized(T::Int32, &[2], &[1.0, 2.0]);
    assert_eq!(
        parse_tensor(&bytes, T::Float32).unwrap_err(),
        "Type mismatch between parsed tensor (int32) and dtype (float)"
    );
    assert_eq!(
        parse_tensor(&[1, 2], T::Float32).unwrap_err(),
        "Could not parse `serialized` as TensorProto"
    );
    // Content of the wrong length for the shape.
    let mut short = serialized(T::Float32, &[2], &[1.0, 2.0]);
    short.truncate(short.len() - 4);
    assert!(parse_tensor(&short, T::Float32).is_err());
    let good = serialized(T::Float64, &[3, 1], &[1.0, -2.0, 0.25]);
    for cut in 0..good.len() {
        let _ = parse_tensor(&good[..cut], T::Float64);
    }
    for bit in 0..good.len() * 8 {
        let mut b = good.clone();
        b[bit / 8] ^= 1 << (bit % 8);
        let _ = parse_tensor(&b, T::Float64);
    }
}

/// A TensorProto with typed values instead of `tensor_content`.
fn typed(dtype: TensorDType, dims: &[u64], field: u32, f: impl FnOnce(&mut Encoder)) -> Vec<u8> {
    let mut e = Encoder::new();
    e.varint(1, dtype.enum_value());
    e.message(2, |s| {
        for &d in dims {
            s.message(2, |dim| dim.varint(1, d));
        }
    });
    let mut vals = Encoder::new();
    f(&mut vals);
    if !vals.buf.is_empty() {
        // `f` wrote the elements (varints or little-endian words).
        e.bytes(field, &vals.buf);
    }
    e.finish()
}

#[test]
fn typed_values_follow_tfs_from_proto_fill_rule() {
    // float_val [1, 2] for 3 values: the last fills.
    let b = typed(T::Float32, &[3], 6, |v| {
        v.buf.extend_from_slice(&1f32.to_le_bytes());
        v.buf.extend_from_slice(&2f32.to_le_bytes());
    });
    assert_eq!(
        parse_tensor(&b, T::Float32).unwrap().values,
        [1.0, 2.0, 2.0]
    );
    // No int_val: zeros. More values than the shape: the first ones.
    let b = typed(T::Int16, &[2], 8, |_| {});
    assert_eq!(parse_tensor(&b, T::Int16).unwrap().values, [0.0, 0.0]);
    let b = typed(T::Int8, &[2], 8, |v| {
        for x in [-3i64, 5, 7] {
            v.raw_varint(x as u64);
        }
    });
    assert_eq!(parse_tensor(&b, T::Int8).unwrap().values, [-3.0, 5.0]);
    // half_val holds the bits; unpacked int64_val.
    let b = typed(T::Float16, &[1], 5, |v| v.raw_varint(0x3c00));
    assert_eq!(parse_tensor(&b, T::Float16).unwrap().values, [1.0]);
    let mut e = Encoder::new();
    e.varint(1, T::Int64.enum_value());
    e.message(2, |s| s.message(2, |d| d.varint(1, 2)));
    e.int64(11, -7);
    e.int64(11, 9);
    assert_eq!(
        parse_tensor(&e.finish(), T::Int64).unwrap().values,
        [-7.0, 9.0]
    );
}

fn decoded(
    bytes: &[u8],
    t: TensorDType,
    le: bool,
    fixed: Option<usize>,
) -> Result<Vec<f64>, String> {
    let mut out = Vec::new();
    decode_raw(bytes, t, le, fixed, |_, x| {
        out.push(x);
        Ok::<(), String>(())
    })?;
    Ok(out)
}

#[test]
fn decode_raw_is_tfs() {
    let b: Vec<u8> = (1..=8).collect();
    assert_eq!(
        decoded(&b, T::UInt16, true, None).unwrap(),
        [513.0, 1027.0, 1541.0, 2055.0]
    );
    assert_eq!(
        decoded(&b, T::Int32, true, None).unwrap(),
        [67305985.0, 134678021.0]
    );
    assert_eq!(
        decoded(&b, T::Int64, true, None).unwrap(),
        [578437695752307201.0]
    );
    assert_eq!(
        decoded(&b, T::Float16, true, None).unwrap(),
        [
            3.057718276977539e-05,
            6.121397018432617e-05,
            9.185075759887695e-05,
            0.00012290477752685547
        ]
    );
    assert_eq!(
        decoded(&b, T::BFloat16, true, None).unwrap()[0],
        9.477423203504693e-38
    );
    assert_eq!(
        decoded(&b, T::Float32, true, None).unwrap()[1],
        4.063216068939723e-34
    );
    assert_eq!(
        decoded(&b, T::Float64, true, None).unwrap(),
        [5.447603722011605e-270]
    );
    assert_eq!(decoded(&b[..4], T::Bool, true, None).unwrap(), [1.0; 4]);
    assert_eq!(decoded(&[1, 2], T::Int16, false, None).unwrap(), [258.0]);
    assert_eq!(
        decoded(&[1, 2], T::Int16, true, Some(4)).unwrap(),
        [513.0, 0.0]
    );
    assert_eq!(
        decoded(&[1, 2, 3, 4, 5, 6], T::Int16, true, Some(4)).unwrap(),
        [513.0, 1027.0]
    );
    assert_eq!(
        decoded(&[1, 2, 3], T::Int16, true, None).unwrap_err(),
        "Input to DecodeRaw has length 3 that is not a multiple of 2, the size of int16"
    );
    assert_eq!(
        decoded(&[1, 2], T::Int16, true, Some(3)).unwrap_err(),
        "fixed_length (3) must be a multiple of the size of out_type (2)"
    );
    assert!(decoded(&[], T::Float32, true, None).unwrap().is_empty());
}

#[test]
fn cast_and_write_round_trip_through_read() {
    for t in ALL {
        for x in [0.0, 1.0, 100.0, -7.0, 0.1, 65504.0, 1e30] {
            let Ok(v) = t.cast(x) else {
                continue;
            };
            for le in [true, false] {
                let mut b = Vec::new();
                t.write(v, le, &mut b);
                assert_eq!(b.len(), t.size());
                assert_eq!(t.read(&b, le), v, "{t:?} {x}");
            }
        }
    }
    assert_eq!(
        T::UInt8.cast(256.0).unwrap_err(),
        "256 is not a uint8 value"
    );
    assert!(T::Int32.cast(1.5).is_err());
    assert!(T::Bool.cast(2.0).is_err());
    assert_eq!(T::Float16.cast(0.1).unwrap(), 0.0999755859375);
    assert_eq!(T::Float16.cast(65520.0).unwrap(), f64::INFINITY);
    assert_eq!(T::Float16.cast(1e-7).unwrap(), 1.1920928955078125e-7);
    assert_eq!(T::BFloat16.cast(1.00390625).unwrap(), 1.0);
    assert_eq!(T::BFloat16.cast(1.01171875).unwrap(), 1.015625);
    assert_eq!(TensorDType::from_tf_name("tf.half"), Some(T::Float16));
    assert_eq!(TensorDType::from_tf_name("double"), Some(T::Float64));
    assert_eq!(TensorDType::from_tf_name("complex64"), None);
}
