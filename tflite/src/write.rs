//! Writing a [`Model`] as a TFLite flatbuffer (`schema.fbs` v3, identifier `TFL3`).
//!
//! Owns: [`to_bytes`]. The tables are built by hand with
//! the `flatbuffers` crate's builder (no generated code: specc writes only the
//! fields in [`crate::schema::field`]).
//! Invariants: constant data starts on a 16-byte boundary of the file (as
//! TF's converter writes it, so runtimes may map weights in place); fields
//! equal to the schema's default are omitted, except those TFLite reads
//! without a default (`SoftmaxOptions.beta`, `OperatorCode.version`);
//! `deprecated_builtin_code` is `min(builtin_code, 127)`. (Writing the file,
//! atomically, is the caller's: `specc export` uses the runtime's
//! `io::atomic`.)

use flatbuffers::{FlatBufferBuilder, Push, PushAlignment, WIPOffset};

use crate::model::{BuiltinOptions, Model, Quantization, Tensor};
use crate::schema::{field as f, FILE_IDENTIFIER, PLACEHOLDER_FOR_GREATER_OP_CODES};

/// One byte of constant data, aligned so that a buffer's data starts on 16 bytes.
#[derive(Clone, Copy)]
struct DataByte(u8);

impl Push for DataByte {
    type Output = u8;
    unsafe fn push(&self, dst: &mut [u8], _written_len: usize) {
        dst[0] = self.0;
    }
    fn size() -> usize {
        1
    }
    fn alignment() -> PushAlignment {
        PushAlignment::new(16)
    }
}

type Fbb<'a> = FlatBufferBuilder<'a>;

/// The flatbuffer of `model`.
pub fn to_bytes(model: &Model) -> Vec<u8> {
    let data_bytes: usize = model.buffers.iter().map(|b| b.data.len() + 16).sum();
    let mut b = FlatBufferBuilder::with_capacity(data_bytes + 4096);

    let buffers: Vec<_> = model
        .buffers
        .iter()
        .map(|buf| {
            let data = (!buf.data.is_empty()).then(|| {
                let bytes: Vec<DataByte> = buf.data.iter().map(|&x| DataByte(x)).collect();
                b.create_vector(&bytes)
            });
            let t = b.start_table();
            if let Some(d) = data {
                b.push_slot_always(f::buffer::DATA, d);
            }
            b.end_table(t)
        })
        .collect();
    let buffers = b.create_vector(&buffers);

    let codes: Vec<_> = model
        .operator_codes
        .iter()
        .map(|c| {
            let custom = c.custom_code.as_deref().map(|s| b.create_string(s));
            let code = c.builtin_code.code();
            let t = b.start_table();
            b.push_slot::<i32>(f::operator_code::BUILTIN_CODE, code, 0);
            if let Some(s) = custom {
                b.push_slot_always(f::operator_code::CUSTOM_CODE, s);
            }
            b.push_slot_always::<i32>(f::operator_code::VERSION, c.version);
            let deprecated = code.clamp(0, PLACEHOLDER_FOR_GREATER_OP_CODES as i32) as i8;
            b.push_slot::<i8>(f::operator_code::DEPRECATED_BUILTIN_CODE, deprecated, 0);
            b.end_table(t)
        })
        .collect();
    let codes = b.create_vector(&codes);

    let subgraphs: Vec<_> = model
        .subgraphs
        .iter()
        .map(|g| {
            let tensors: Vec<_> = g.tensors.iter().map(|t| tensor(&mut b, t)).collect();
            let tensors = b.create_vector(&tensors);
            let inputs = b.create_vector(&g.inputs);
            let outputs = b.create_vector(&g.outputs);
            let operators: Vec<_> = g
                .operators
                .iter()
                .map(|op| {
                    let inputs = b.create_vector(&op.inputs);
                    let outputs = b.create_vector(&op.outputs);
                    let options = options(&mut b, &op.options);
                    let t = b.start_table();
                    b.push_slot::<u32>(f::operator::OPCODE_INDEX, op.opcode_index, 0);
                    b.push_slot_always(f::operator::INPUTS, inputs);
                    b.push_slot_always(f::operator::OUTPUTS, outputs);
                    if let Some(o) = options {
                        b.push_slot::<u8>(
                            f::operator::BUILTIN_OPTIONS_TYPE,
                            op.options.type_code(),
                            0,
                        );
                        b.push_slot_always(f::operator::BUILTIN_OPTIONS, o);
                    }
                    b.end_table(t)
                })
                .collect();
            let operators = b.create_vector(&operators);
            let name = b.create_string(&g.name);
            let t = b.start_table();
            b.push_slot_always(f::subgraph::TENSORS, tensors);
            b.push_slot_always(f::subgraph::INPUTS, inputs);
            b.push_slot_always(f::subgraph::OUTPUTS, outputs);
            b.push_slot_always(f::subgraph::OPERATORS, operators);
            b.push_slot_always(f::subgraph::NAME, name);
            b.end_table(t)
        })
        .collect();
    let subgraphs = b.create_vector(&subgraphs);

    let metadata: Vec<_> = model
        .metadata
        .iter()
        .map(|m| {
            let name = b.create_string(&m.name);
            let t = b.start_table();
            b.push_slot_always(f::metadata::NAME, name);
            b.push_slot::<u32>(f::metadata::BUFFER, m.buffer, 0);
            b.end_table(t)
        })
        .collect();
    let metadata = b.create_vector(&metadata);

    let signatures: Vec<_> = model
        .signature_defs
        .iter()
        .map(|s| {
            let inputs = tensor_maps(&mut b, &s.inputs);
            let outputs = tensor_maps(&mut b, &s.outputs);
            let key = b.create_string(&s.signature_key);
            let t = b.start_table();
            b.push_slot_always(f::signature_def::INPUTS, inputs);
            b.push_slot_always(f::signature_def::OUTPUTS, outputs);
            b.push_slot_always(f::signature_def::SIGNATURE_KEY, key);
            b.push_slot::<u32>(f::signature_def::SUBGRAPH_INDEX, s.subgraph_index, 0);
            b.end_table(t)
        })
        .collect();
    let signatures = b.create_vector(&signatures);

    let description = b.create_string(&model.description);
    let t = b.start_table();
    b.push_slot::<u32>(f::model::VERSION, model.version, 0);
    b.push_slot_always(f::model::OPERATOR_CODES, codes);
    b.push_slot_always(f::model::SUBGRAPHS, subgraphs);
    b.push_slot_always(f::model::DESCRIPTION, description);
    b.push_slot_always(f::model::BUFFERS, buffers);
    b.push_slot_always(f::model::METADATA, metadata);
    b.push_slot_always(f::model::SIGNATURE_DEFS, signatures);
    let root = b.end_table(t);
    b.finish(root, Some(FILE_IDENTIFIER));
    b.finished_data().to_vec()
}

fn tensor_maps<'a>(
    b: &mut Fbb<'a>,
    maps: &[crate::model::TensorMap],
) -> WIPOffset<
    flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<flatbuffers::TableFinishedWIPOffset>>,
> {
    let maps: Vec<_> = maps
        .iter()
        .map(|m| {
            let name = b.create_string(&m.name);
            let t = b.start_table();
            b.push_slot_always(f::tensor_map::NAME, name);
            b.push_slot::<u32>(f::tensor_map::TENSOR_INDEX, m.tensor_index, 0);
            b.end_table(t)
        })
        .collect();
    b.create_vector(&maps)
}

fn tensor(b: &mut Fbb<'_>, t: &Tensor) -> WIPOffset<flatbuffers::TableFinishedWIPOffset> {
    let shape = b.create_vector(&t.shape);
    let signature = t.shape_signature.as_ref().map(|s| b.create_vector(s));
    let name = b.create_string(&t.name);
    let quantization = t.quantization.as_ref().map(|q| quantization(b, q));
    let table = b.start_table();
    b.push_slot_always(f::tensor::SHAPE, shape);
    b.push_slot::<i8>(f::tensor::TYPE, t.tensor_type.code(), 0);
    b.push_slot::<u32>(f::tensor::BUFFER, t.buffer, 0);
    b.push_slot_always(f::tensor::NAME, name);
    if let Some(q) = quantization {
        b.push_slot_always(f::tensor::QUANTIZATION, q);
    }
    b.push_slot::<bool>(f::tensor::IS_VARIABLE, t.is_variable, false);
    if let Some(s) = signature {
        b.push_slot_always(f::tensor::SHAPE_SIGNATURE, s);
    }
    b.end_table(table)
}

fn quantization(
    b: &mut Fbb<'_>,
    q: &Quantization,
) -> WIPOffset<flatbuffers::TableFinishedWIPOffset> {
    let min = (!q.min.is_empty()).then(|| b.create_vector(&q.min));
    let max = (!q.max.is_empty()).then(|| b.create_vector(&q.max));
    let scale = (!q.scale.is_empty()).then(|| b.create_vector(&q.scale));
    let zero_point = (!q.zero_point.is_empty()).then(|| b.create_vector(&q.zero_point));
    let t = b.start_table();
    if let Some(v) = min {
        b.push_slot_always(f::quantization::MIN, v);
    }
    if let Some(v) = max {
        b.push_slot_always(f::quantization::MAX, v);
    }
    if let Some(v) = scale {
        b.push_slot_always(f::quantization::SCALE, v);
    }
    if let Some(v) = zero_point {
        b.push_slot_always(f::quantization::ZERO_POINT, v);
    }
    b.push_slot::<i32>(
        f::quantization::QUANTIZED_DIMENSION,
        q.quantized_dimension,
        0,
    );
    b.end_table(t)
}

/// The options table of an operator (`None` for `BuiltinOptions::None` and
/// options specc did not read).
fn options(
    b: &mut Fbb<'_>,
    o: &BuiltinOptions,
) -> Option<WIPOffset<flatbuffers::TableFinishedWIPOffset>> {
    if matches!(o, BuiltinOptions::None | BuiltinOptions::Other(_)) {
        return None;
    }
    let new_shape = match o {
        BuiltinOptions::Reshape { new_shape } => Some(b.create_vector(new_shape)),
        _ => None,
    };
    let boundaries = match o {
        BuiltinOptions::Bucketize { boundaries } => Some(b.create_vector(boundaries)),
        _ => None,
    };
    let t = b.start_table();
    match o {
        BuiltinOptions::None | BuiltinOptions::Other(_) | BuiltinOptions::Empty(_) => {}
        BuiltinOptions::FullyConnected {
            fused_activation_function,
            keep_num_dims,
            asymmetric_quantize_inputs,
        } => {
            b.push_slot::<i8>(f::FIRST, fused_activation_function.code(), 0);
            b.push_slot::<bool>(f::THIRD, *keep_num_dims, false);
            b.push_slot::<bool>(10, *asymmetric_quantize_inputs, false);
        }
        BuiltinOptions::Softmax { beta } => b.push_slot_always::<f32>(f::FIRST, *beta),
        BuiltinOptions::Concatenation {
            axis,
            fused_activation_function,
        } => {
            b.push_slot::<i32>(f::FIRST, *axis, 0);
            b.push_slot::<i8>(f::SECOND, fused_activation_function.code(), 0);
        }
        BuiltinOptions::Add {
            fused_activation_function: a,
        }
        | BuiltinOptions::Sub {
            fused_activation_function: a,
        }
        | BuiltinOptions::Mul {
            fused_activation_function: a,
        }
        | BuiltinOptions::Div {
            fused_activation_function: a,
        } => b.push_slot::<i8>(f::FIRST, a.code(), 0),
        BuiltinOptions::Reshape { .. } => {
            if let Some(v) = new_shape {
                b.push_slot_always(f::FIRST, v);
            }
        }
        BuiltinOptions::Bucketize { .. } => {
            if let Some(v) = boundaries {
                b.push_slot_always(f::FIRST, v);
            }
        }
        BuiltinOptions::CallOnce {
            init_subgraph_index,
        } => b.push_slot::<i32>(f::FIRST, *init_subgraph_index, 0),
        BuiltinOptions::Hashtable {
            table_id,
            key_dtype,
            value_dtype,
        } => {
            b.push_slot::<i32>(f::FIRST, *table_id, 0);
            b.push_slot::<i8>(f::SECOND, key_dtype.code(), 0);
            b.push_slot::<i8>(f::THIRD, value_dtype.code(), 0);
        }
        BuiltinOptions::Gather { axis, batch_dims } => {
            b.push_slot::<i32>(f::FIRST, *axis, 0);
            b.push_slot::<i32>(f::SECOND, *batch_dims, 0);
        }
        BuiltinOptions::Reducer { keep_dims } => b.push_slot::<bool>(f::FIRST, *keep_dims, false),
        BuiltinOptions::ArgMax { output_type } => {
            b.push_slot::<i8>(f::FIRST, output_type.code(), 0)
        }
        BuiltinOptions::Cast {
            in_data_type,
            out_data_type,
        } => {
            b.push_slot::<i8>(f::FIRST, in_data_type.code(), 0);
            b.push_slot::<i8>(f::SECOND, out_data_type.code(), 0);
        }
        BuiltinOptions::BatchMatMul { adj_x, adj_y } => {
            b.push_slot::<bool>(f::FIRST, *adj_x, false);
            b.push_slot::<bool>(f::SECOND, *adj_y, false);
        }
        BuiltinOptions::Conv2D {
            padding,
            stride_w,
            stride_h,
            fused_activation_function: a,
            dilation_w_factor,
            dilation_h_factor,
        } => {
            b.push_slot::<i8>(f::FIRST, padding.code(), 0);
            b.push_slot::<i32>(f::SECOND, *stride_w, 0);
            b.push_slot::<i32>(f::THIRD, *stride_h, 0);
            b.push_slot::<i8>(f::FOURTH, a.code(), 0);
            b.push_slot::<i32>(f::FIFTH, *dilation_w_factor, 1);
            b.push_slot::<i32>(f::SIXTH, *dilation_h_factor, 1);
        }
        BuiltinOptions::DepthwiseConv2D {
            padding,
            stride_w,
            stride_h,
            depth_multiplier,
            fused_activation_function: a,
            dilation_w_factor,
            dilation_h_factor,
        } => {
            b.push_slot::<i8>(f::FIRST, padding.code(), 0);
            b.push_slot::<i32>(f::SECOND, *stride_w, 0);
            b.push_slot::<i32>(f::THIRD, *stride_h, 0);
            b.push_slot::<i32>(f::FOURTH, *depth_multiplier, 0);
            b.push_slot::<i8>(f::FIFTH, a.code(), 0);
            b.push_slot::<i32>(f::SIXTH, *dilation_w_factor, 1);
            b.push_slot::<i32>(f::SEVENTH, *dilation_h_factor, 1);
        }
        BuiltinOptions::Pool2D {
            padding,
            stride_w,
            stride_h,
            filter_width,
            filter_height,
            fused_activation_function: a,
        } => {
            b.push_slot::<i8>(f::FIRST, padding.code(), 0);
            b.push_slot::<i32>(f::SECOND, *stride_w, 0);
            b.push_slot::<i32>(f::THIRD, *stride_h, 0);
            b.push_slot::<i32>(f::FOURTH, *filter_width, 0);
            b.push_slot::<i32>(f::FIFTH, *filter_height, 0);
            b.push_slot::<i8>(f::SIXTH, a.code(), 0);
        }
        BuiltinOptions::TransposeConv {
            padding,
            stride_w,
            stride_h,
            fused_activation_function: a,
        } => {
            b.push_slot::<i8>(f::FIRST, padding.code(), 0);
            b.push_slot::<i32>(f::SECOND, *stride_w, 0);
            b.push_slot::<i32>(f::THIRD, *stride_h, 0);
            b.push_slot::<i8>(f::FOURTH, a.code(), 0);
        }
        BuiltinOptions::Shape { out_type } => b.push_slot::<i8>(f::FIRST, out_type.code(), 0),
        BuiltinOptions::SequenceLstm {
            fused_activation_function,
            cell_clip,
            proj_clip,
            time_major,
            asymmetric_quantize_inputs,
        } => {
            b.push_slot::<i8>(f::FIRST, fused_activation_function.code(), 0);
            b.push_slot::<f32>(f::SECOND, *cell_clip, 0.0);
            b.push_slot::<f32>(f::THIRD, *proj_clip, 0.0);
            b.push_slot_always::<bool>(f::FOURTH, *time_major);
            b.push_slot::<bool>(f::FIFTH, *asymmetric_quantize_inputs, false);
        }
        BuiltinOptions::SequenceRnn {
            time_major,
            fused_activation_function,
            asymmetric_quantize_inputs,
        } => {
            b.push_slot_always::<bool>(f::FIRST, *time_major);
            b.push_slot::<i8>(f::SECOND, fused_activation_function.code(), 0);
            b.push_slot::<bool>(f::THIRD, *asymmetric_quantize_inputs, false);
        }
    }
    Some(b.end_table(t))
}
