//! The interpreter's recurrent kernels: UNIDIRECTIONAL_SEQUENCE_LSTM and
//! UNIDIRECTIONAL_SEQUENCE_RNN over float inputs, with float weights or int8
//! weights (the hybrid kernels of dynamic-range quantization: each product
//! through [`fully_connected_hybrid`], the input and state quantized per row).
//!
//! Invariants: the semantics are TFLite's reference kernels' (`lstm_eval`):
//! gates in TFLite's order input, forget, cell, output, each `bias + W_x·x +
//! W_h·h (+ w_c ⊙ c)`; the candidate and the output squashed by the fused
//! activation; `c` clipped to `±cell_clip` and the projection to
//! `±proj_clip` when they are positive; the input gate `1 − f` when the
//! input weights are absent (CIFG); the state starts at the variable
//! tensors' values (zero: specc's interpreter keeps no state between
//! invocations). A shape the operator cannot take is an error, never a
//! panic.

use ndarray::{Array2, ArrayD, ArrayView2, Axis, Ix2, IxDyn};

use super::float::apply_activation;
use super::int8::fully_connected_hybrid;
use crate::model::Tensor;
use crate::schema::ActivationFunctionType;

type Result<T> = std::result::Result<T, String>;

/// A weight matrix `[out, in]`: float, or int8 with its tensor (scale).
#[derive(Clone, Copy)]
pub(crate) enum Weights<'a> {
    F32(&'a ArrayD<f32>),
    I8(&'a ArrayD<i8>, &'a Tensor),
}

impl Weights<'_> {
    fn dims(&self) -> Result<(usize, usize)> {
        let s = match self {
            Weights::F32(w) => w.shape(),
            Weights::I8(w, _) => w.shape(),
        };
        match s {
            [o, i] => Ok((*o, *i)),
            _ => Err(format!("weights of shape {s:?} are not a matrix")),
        }
    }

    /// `acc[b, o] += Σ_i self[o, i] · x[b, i]`.
    fn accumulate(&self, x: ArrayView2<f32>, acc: &mut Array2<f32>) -> Result<()> {
        let (o, i) = self.dims()?;
        if x.ncols() != i || acc.ncols() != o || acc.nrows() != x.nrows() {
            return Err(format!(
                "weights [{o}, {i}] do not multiply an operand of shape {:?} into {:?}",
                x.shape(),
                acc.shape()
            ));
        }
        match self {
            Weights::F32(w) => {
                let w = w
                    .view()
                    .into_dimensionality::<Ix2>()
                    .map_err(|e| e.to_string())?;
                for (mut a, xr) in acc.rows_mut().into_iter().zip(x.rows()) {
                    for (av, wr) in a.iter_mut().zip(w.rows()) {
                        let mut s = 0.0f32;
                        for (&wv, &xv) in wr.iter().zip(xr.iter()) {
                            s += wv * xv;
                        }
                        *av += s;
                    }
                }
            }
            Weights::I8(w, t) => {
                let y = fully_connected_hybrid(&x.to_owned().into_dyn(), w, t, None)?;
                let y = y.into_dimensionality::<Ix2>().map_err(|e| e.to_string())?;
                *acc += &y;
            }
        }
        Ok(())
    }
}

/// The operands of an LSTM, by TFLite's gate order (input, forget, cell,
/// output); `None` where the model leaves an optional input absent.
pub(crate) struct LstmOperands<'a> {
    pub input_to: [Option<Weights<'a>>; 4],
    pub recurrent_to: [Option<Weights<'a>>; 4],
    /// Peepholes `[H]` of the input, forget and output gates.
    pub cell_to: [Option<ArrayD<f32>>; 3],
    pub bias: [Option<&'a ArrayD<f32>>; 4],
    pub projection: Option<Weights<'a>>,
    pub projection_bias: Option<&'a ArrayD<f32>>,
    /// The initial output and cell states `[B, P]`, `[B, H]` (`None`: zero).
    pub output_state: Option<&'a ArrayD<f32>>,
    pub cell_state: Option<&'a ArrayD<f32>>,
}

/// The options both sequence kernels take.
#[derive(Clone, Copy)]
pub(crate) struct SequenceOptions {
    pub activation: ActivationFunctionType,
    pub cell_clip: f32,
    pub proj_clip: f32,
    pub time_major: bool,
}

/// The input `[B, T, D]` (or `[T, B, D]`) as `[T][B, D]` steps.
fn steps(x: &ArrayD<f32>, time_major: bool) -> Result<(usize, usize, Vec<Array2<f32>>)> {
    let [a, b, _] = x.shape() else {
        return Err(format!("input of shape {:?} is not [B, T, D]", x.shape()));
    };
    let (batch, t, time_axis) = if time_major { (*b, *a, 0) } else { (*a, *b, 1) };
    let steps = (0..t)
        .map(|k| {
            x.index_axis(Axis(time_axis), k)
                .into_dimensionality::<Ix2>()
                .map(|v| v.to_owned())
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>>>()?;
    Ok((batch, t, steps))
}

/// Stacks the per-step outputs `[T][B, P]` as `[B, T, P]` (or `[T, B, P]`).
fn stack(outputs: Vec<Array2<f32>>, batch: usize, width: usize, time_major: bool) -> ArrayD<f32> {
    let t = outputs.len();
    let shape = if time_major {
        [t, batch, width]
    } else {
        [batch, t, width]
    };
    let mut y = ArrayD::zeros(IxDyn(&shape));
    for (k, o) in outputs.into_iter().enumerate() {
        let axis = if time_major { 0 } else { 1 };
        y.index_axis_mut(Axis(axis), k).assign(&o.into_dyn().view());
    }
    y
}

fn initial(state: Option<&ArrayD<f32>>, batch: usize, width: usize) -> Result<Array2<f32>> {
    match state {
        None => Ok(Array2::zeros((batch, width))),
        Some(s) if s.shape() == [batch, width] => s
            .view()
            .into_dimensionality::<Ix2>()
            .map(|v| v.to_owned())
            .map_err(|e| e.to_string()),
        Some(s) => Err(format!(
            "a state of shape {:?} for a batch of {batch} and {width} units",
            s.shape()
        )),
    }
}

fn activate(x: Array2<f32>, a: ActivationFunctionType) -> Result<Array2<f32>> {
    apply_activation(x.into_dyn(), a)?
        .into_dimensionality::<Ix2>()
        .map_err(|e| e.to_string())
}

fn sigmoid(x: &mut Array2<f32>) {
    x.mapv_inplace(|v| 1.0 / (1.0 + (-v).exp()));
}

fn clip(x: &mut Array2<f32>, limit: f32) {
    if limit > 0.0 {
        x.mapv_inplace(|v| v.clamp(-limit, limit));
    }
}

/// UNIDIRECTIONAL_SEQUENCE_LSTM: the outputs `[B, T, P]` (time-major:
/// `[T, B, P]`).
pub(crate) fn sequence_lstm(
    x: &ArrayD<f32>,
    w: &LstmOperands<'_>,
    o: SequenceOptions,
) -> Result<ArrayD<f32>> {
    let (batch, _, xs) = steps(x, o.time_major)?;
    let forget = w.recurrent_to[1].ok_or("the forget gate's recurrent weights are absent")?;
    let (_, p) = forget.dims()?;
    let units = w.bias[1].map_or(Ok(0), |b| Ok::<_, String>(b.len()))?;
    let units = if units == 0 { forget.dims()?.0 } else { units };
    let mut h = initial(w.output_state, batch, p)?;
    let mut c = initial(w.cell_state, batch, units)?;
    let mut outputs = Vec::with_capacity(xs.len());
    for xt in &xs {
        let mut gates: Vec<Option<Array2<f32>>> = Vec::with_capacity(4);
        for g in 0..4 {
            if w.input_to[g].is_none() && g == 0 {
                gates.push(None);
                continue;
            }
            let mut z = Array2::<f32>::zeros((batch, units));
            if let Some(b) = w.bias[g] {
                if b.len() != units {
                    return Err(format!("gate bias of {} values for {units} units", b.len()));
                }
                for mut row in z.rows_mut() {
                    row.iter_mut().zip(b.iter()).for_each(|(v, &bv)| *v = bv);
                }
            }
            let wx = w.input_to[g].ok_or_else(|| format!("gate {g}'s input weights are absent"))?;
            wx.accumulate(xt.view(), &mut z)?;
            let wh = w.recurrent_to[g]
                .ok_or_else(|| format!("gate {g}'s recurrent weights are absent"))?;
            wh.accumulate(h.view(), &mut z)?;
            gates.push(Some(z));
        }
        let peephole = |z: &mut Array2<f32>, k: usize, c: &Array2<f32>| -> Result<()> {
            if let Some(wc) = &w.cell_to[k] {
                if wc.len() != units {
                    return Err(format!(
                        "a peephole of {} values for {units} units",
                        wc.len()
                    ));
                }
                for (mut zr, cr) in z.rows_mut().into_iter().zip(c.rows()) {
                    for ((zv, &cv), &wv) in zr.iter_mut().zip(cr.iter()).zip(wc.iter()) {
                        *zv += wv * cv;
                    }
                }
            }
            Ok(())
        };
        let mut f = gates[1].take().ok_or("forget gate")?;
        peephole(&mut f, 1, &c)?;
        sigmoid(&mut f);
        let i = match gates[0].take() {
            Some(mut i) => {
                peephole(&mut i, 0, &c)?;
                sigmoid(&mut i);
                i
            }
            None => f.mapv(|v| 1.0 - v),
        };
        let g = activate(gates[2].take().ok_or("cell gate")?, o.activation)?;
        c = &f * &c + &i * &g;
        clip(&mut c, o.cell_clip);
        let mut og = gates[3].take().ok_or("output gate")?;
        peephole(&mut og, 2, &c)?;
        sigmoid(&mut og);
        let m = &og * &activate(c.clone(), o.activation)?;
        h = match w.projection {
            Some(proj) => {
                let mut y = Array2::<f32>::zeros((batch, p));
                if let Some(b) = w.projection_bias {
                    for mut row in y.rows_mut() {
                        row.iter_mut().zip(b.iter()).for_each(|(v, &bv)| *v = bv);
                    }
                }
                proj.accumulate(m.view(), &mut y)?;
                clip(&mut y, o.proj_clip);
                y
            }
            None if m.ncols() == p => m,
            None => {
                return Err(format!(
                    "{units} units give outputs of {p} without a projection"
                ))
            }
        };
        outputs.push(h.clone());
    }
    Ok(stack(outputs, batch, p, o.time_major))
}

/// UNIDIRECTIONAL_SEQUENCE_RNN: `h = act(W_x·x + W_h·h + b)` per step, the
/// outputs `[B, T, H]` (time-major: `[T, B, H]`).
pub(crate) fn sequence_rnn(
    x: &ArrayD<f32>,
    input_weights: Weights<'_>,
    recurrent_weights: Weights<'_>,
    bias: &ArrayD<f32>,
    hidden_state: Option<&ArrayD<f32>>,
    o: SequenceOptions,
) -> Result<ArrayD<f32>> {
    let (batch, _, xs) = steps(x, o.time_major)?;
    let (units, _) = recurrent_weights.dims()?;
    if bias.len() != units {
        return Err(format!("a bias of {} values for {units} units", bias.len()));
    }
    let mut h = initial(hidden_state, batch, units)?;
    let mut outputs = Vec::with_capacity(xs.len());
    for xt in &xs {
        let mut z = Array2::<f32>::zeros((batch, units));
        for mut row in z.rows_mut() {
            row.iter_mut().zip(bias.iter()).for_each(|(v, &bv)| *v = bv);
        }
        input_weights.accumulate(xt.view(), &mut z)?;
        recurrent_weights.accumulate(h.view(), &mut z)?;
        h = activate(z, o.activation)?;
        outputs.push(h.clone());
    }
    Ok(stack(outputs, batch, units, o.time_major))
}
