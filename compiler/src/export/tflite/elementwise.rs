//! The elementwise operators: unary (ABS ... TANH; `1 / x` as DIV),
//! binary (ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM, POW), comparisons (a BOOL
//! operator and a CAST to the IR's 1.0 / 0.0), SELECT_V2 (its condition
//! `!= 0`), CAST and BROADCAST_TO.
//!
//! Invariants: binary operators read their operands before an explicit
//! `broadcast_to` ([`Lower::operands`]: TFLite broadcasts, NumPy rules); a
//! broadcast to a dynamic batch is an ADD of zeros with batch 1 when the
//! input carries the batch axis, else refused; `log1p` and `softplus` are
//! refused (as `log(1 + ...)` they would lose their precision).

use specc_tflite::{
    ActivationFunctionType as Act, BuiltinOperator as B, BuiltinOptions, TensorType,
};

use super::lower::Lower;
use super::R;
use crate::ir::{BinaryOp, Dim, NodeId, Shape, UnaryOp};

impl Lower<'_> {
    /// The TFLite operator of a unary op.
    pub(super) fn unary(&mut self, id: NodeId, u: UnaryOp) -> R<()> {
        let ins = self.g.inputs_of(id).to_vec();
        let none = Act::None;
        let x = self.tensor(ins[0])?;
        let op = match u {
            UnaryOp::Neg => B::Neg,
            UnaryOp::Exp => B::Exp,
            UnaryOp::Log => B::Log,
            UnaryOp::Sqrt => B::Sqrt,
            UnaryOp::Square => B::Square,
            UnaryOp::Abs => B::Abs,
            UnaryOp::Sign => B::Sign,
            UnaryOp::Relu => B::Relu,
            UnaryOp::Sigmoid => B::Logistic,
            UnaryOp::Tanh => B::Tanh,
            UnaryOp::Floor => B::Floor,
            UnaryOp::Ceil => B::Ceil,
            UnaryOp::Sin => B::Sin,
            UnaryOp::Cos => B::Cos,
            UnaryOp::Recip => {
                let one = self.m.constant_f32(&format!("{}/one", self.name(id)), &[], &[1.0]);
                let y = self.out(id);
                self.m.operator(
                    B::Div,
                    &[one, x],
                    &[y],
                    BuiltinOptions::Div {
                        fused_activation_function: none,
                    },
                );
                return Ok(());
            }
            UnaryOp::Log1p | UnaryOp::Softplus => {
                return Err(self.unsupported(
                    id,
                    "TFLite has no builtin for it (writing it as log(1 + ...) would lose its precision)",
                ))
            }
        };
        let y = self.out(id);
        let options = if op == B::Exp {
            BuiltinOptions::Empty(specc_tflite::schema::options_type::EXP)
        } else {
            BuiltinOptions::None
        };
        self.m.operator(op, &[x], &[y], options);
        Ok(())
    }

    /// A binary op, a comparison through BOOL and CAST.
    pub(super) fn binary(&mut self, id: NodeId, b: BinaryOp) -> R<()> {
        let g = self.g;
        let none = Act::None;
        let ops = self.operands(id);
        let a = self.tensor(ops[0])?;
        let c = self.tensor(ops[1])?;
        let (op, options) = match b {
            BinaryOp::Add => (
                B::Add,
                BuiltinOptions::Add {
                    fused_activation_function: none,
                },
            ),
            BinaryOp::Sub => (
                B::Sub,
                BuiltinOptions::Sub {
                    fused_activation_function: none,
                },
            ),
            BinaryOp::Mul => (
                B::Mul,
                BuiltinOptions::Mul {
                    fused_activation_function: none,
                },
            ),
            BinaryOp::Div => (
                B::Div,
                BuiltinOptions::Div {
                    fused_activation_function: none,
                },
            ),
            BinaryOp::Max => (
                B::Maximum,
                BuiltinOptions::Empty(specc_tflite::schema::options_type::MAXIMUM_MINIMUM),
            ),
            BinaryOp::Min => (
                B::Minimum,
                BuiltinOptions::Empty(specc_tflite::schema::options_type::MAXIMUM_MINIMUM),
            ),
            BinaryOp::Pow => (B::Pow, BuiltinOptions::None),
            BinaryOp::Gt => (B::Greater, BuiltinOptions::None),
            BinaryOp::Ge => (B::GreaterEqual, BuiltinOptions::None),
            BinaryOp::Lt => (B::Less, BuiltinOptions::None),
            BinaryOp::Le => (B::LessEqual, BuiltinOptions::None),
            BinaryOp::Eq => (B::Equal, BuiltinOptions::None),
            BinaryOp::Ne => (B::NotEqual, BuiltinOptions::None),
        };
        if b.is_comparison() {
            // A BOOL result, then 1.0 / 0.0 as the IR has it.
            let dims = self.dims(g.shape(id));
            let name = format!("{}/bool", self.name(id));
            let cond = self.m.tensor(&name, TensorType::Bool, &dims);
            self.m.operator(op, &[a, c], &[cond], options);
            let y = self.out(id);
            self.cast(cond, TensorType::Bool, y, TensorType::Float32);
        } else {
            let y = self.out(id);
            self.m.operator(op, &[a, c], &[y], options);
        }
        Ok(())
    }

    /// SELECT_V2 of `cond != 0`.
    pub(super) fn select(&mut self, id: NodeId) -> R<()> {
        let ops = self.operands(id);
        let c = self.tensor(ops[0])?;
        let a = self.tensor(ops[1])?;
        let b = self.tensor(ops[2])?;
        let zero = self
            .m
            .constant_f32(&format!("{}/zero", self.name(id)), &[], &[0.0]);
        let shape = self
            .m
            .tensor_info(c)
            .shape_signature
            .clone()
            .unwrap_or_else(|| self.m.tensor_info(c).shape.clone());
        let cond = self
            .m
            .tensor(&format!("{}/cond", self.name(id)), TensorType::Bool, &shape);
        self.m
            .operator(B::NotEqual, &[c, zero], &[cond], BuiltinOptions::None);
        let y = self.out(id);
        self.m.operator(
            B::SelectV2,
            &[cond, a, b],
            &[y],
            BuiltinOptions::Empty(specc_tflite::schema::options_type::SELECT_V2),
        );
        Ok(())
    }

    /// BROADCAST_TO `to`, or with a dynamic batch an ADD of zeros.
    pub(super) fn broadcast_to(&mut self, id: NodeId, to: Shape) -> R<()> {
        let g = self.g;
        let ins = g.inputs_of(id).to_vec();
        let none = Act::None;
        let x = ins[0];
        let xt = self.tensor(x)?;
        let from = g.shape(x).clone();
        let pad = to.rank() - from.rank();
        let batch_kept =
            to.0.iter()
                .enumerate()
                .all(|(k, d)| *d != Dim::Batch || (k >= pad && from.0[k - pad] == Dim::Batch));
        if self.e.batch.is_some() || !to.has_batch() {
            let dims = self.dims(&to);
            let st = self.m.constant_i32(
                &format!("{}/shape", self.name(id)),
                &[dims.len() as i32],
                &dims,
            );
            let y = self.out(id);
            self.m
                .operator(B::BroadcastTo, &[xt, st], &[y], BuiltinOptions::None);
        } else if batch_kept {
            // x + zeros of the target shape with the batch axis 1:
            // ADD broadcasts the dynamic batch itself.
            let dims: Vec<i32> =
                to.0.iter()
                    .map(|d| match d {
                        Dim::Batch => 1,
                        Dim::Fixed(n) => *n as i32,
                    })
                    .collect();
            let n: i32 = dims.iter().product();
            let zeros = self.m.constant_f32(
                &format!("{}/zeros", self.name(id)),
                &dims,
                &vec![0.0; n as usize],
            );
            let y = self.out(id);
            self.m.operator(
                B::Add,
                &[xt, zeros],
                &[y],
                BuiltinOptions::Add {
                    fused_activation_function: none,
                },
            );
        } else {
            return Err(self.unsupported(id, "it broadcasts to the batch size, which a TFLite model with a dynamic batch cannot hold as a constant (export with a fixed batch)"));
        }
        Ok(())
    }

    pub(super) fn cast(&mut self, x: i32, from: TensorType, y: i32, to: TensorType) {
        self.m.operator(
            B::Cast,
            &[x],
            &[y],
            BuiltinOptions::Cast {
                in_data_type: from,
                out_data_type: to,
            },
        );
    }
}
