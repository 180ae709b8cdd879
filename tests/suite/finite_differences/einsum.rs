//! `einsum` and `matmul` over several batch axes, by finite differences:
//! each equation of `tf.einsum` the sema lowering handles (a transpose, a
//! reduction, products with batch, free and contracted letters, Keras
//! MultiHeadAttention's four equations, the batch `B` as a batch, free or
//! contracted letter) and `tf.linalg.matmul` of several and broadcast batch
//! axes, with `transpose_a` / `transpose_b`. The compiled loss equals the
//! reference interpreter's, and the compiled gradients central differences
//! of it (`super::check`). Batched cases build their `[B, T, D]` operands
//! from the input `x` `[B, 3]` by an einsum with a parameter, and weight
//! the result by a constant of its per-example shape. The `sum_*` tests
//! check the values of each equation against the sum it names, written out
//! here independently of the lowering.

use super::{check, p, Case, Param};

/// A seed per test, from its name.
fn seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn run(
    name: &'static str,
    params: Vec<Param>,
    consts: Vec<Param>,
    expr: &'static str,
    y_batched: bool,
) {
    check(
        &Case {
            name,
            params,
            consts,
            expr: expr.to_string(),
            y_batched,
        },
        seed(name),
    );
}

/// A parameter of `dims` in [-1, 1).
fn w(name: &'static str, dims: &'static [usize]) -> Param {
    p(name, dims, -1.0, 1.0)
}

#[test]
fn einsum_transpose() {
    run(
        "einsum_transpose",
        vec![w("a", &[3, 4])],
        vec![],
        "einsum(\"ij->ji\", a)",
        false,
    );
}

#[test]
fn einsum_reduce_a_middle_axis() {
    run(
        "einsum_reduce_a_middle_axis",
        vec![w("a", &[2, 3, 4])],
        vec![],
        "einsum(\"bij->bj\", a)",
        false,
    );
}

#[test]
fn einsum_sum_of_all() {
    run(
        "einsum_sum_of_all",
        vec![w("a", &[3, 4])],
        vec![],
        "einsum(\"ij->\", a)",
        false,
    );
}

#[test]
fn einsum_implicit_result() {
    run(
        "einsum_implicit_result",
        vec![w("a", &[3, 4]), w("c", &[4, 2])],
        vec![],
        "einsum(\"ij,jk\", a, c)",
        false,
    );
}

#[test]
fn einsum_dot_and_outer_products() {
    run(
        "einsum_dot_and_outer_products",
        vec![w("a", &[4]), w("c", &[4]), w("d", &[3])],
        vec![],
        "einsum(\"i,j->ij\", a, d) * einsum(\"i,i->\", a, c)",
        false,
    );
}

#[test]
fn einsum_contracted_last_on_both_sides() {
    run(
        "einsum_contracted_last_on_both_sides",
        vec![w("a", &[3, 4]), w("c", &[2, 4])],
        vec![],
        "einsum(\"ij,kj->ik\", a, c)",
        false,
    );
}

#[test]
fn einsum_contracted_first_on_the_left() {
    run(
        "einsum_contracted_first_on_the_left",
        vec![w("a", &[4, 3]), w("c", &[4, 2])],
        vec![],
        "einsum(\"ji,jk->ki\", a, c)",
        false,
    );
}

#[test]
fn einsum_a_letter_of_one_operand_is_summed_first() {
    run(
        "einsum_a_letter_of_one_operand_is_summed_first",
        vec![w("a", &[2, 3, 4]), w("c", &[4, 5])],
        vec![],
        "einsum(\"ijk,kl->il\", a, c)",
        false,
    );
}

#[test]
fn einsum_projection() {
    run(
        "einsum_projection",
        vec![w("a", &[2, 3, 4]), w("c", &[4, 5])],
        vec![],
        "einsum(\"btd,de->bte\", a, c)",
        false,
    );
}

#[test]
fn einsum_attention_scores() {
    run(
        "einsum_attention_scores",
        vec![w("q", &[2, 3, 2, 4]), w("k", &[2, 5, 2, 4])],
        vec![],
        "einsum(\"bqhd,bkhd->bhqk\", q, k)",
        false,
    );
}

#[test]
fn einsum_attention_values() {
    run(
        "einsum_attention_values",
        vec![w("s", &[2, 2, 3, 5]), w("v", &[2, 5, 2, 4])],
        vec![],
        "einsum(\"bhqk,bkhd->bqhd\", s, v)",
        false,
    );
}

#[test]
fn einsum_multi_head_projection() {
    run(
        "einsum_multi_head_projection",
        vec![w("a", &[2, 3, 4]), w("k", &[4, 2, 3])],
        vec![],
        "einsum(\"abc,cde->abde\", a, k)",
        false,
    );
}

#[test]
fn einsum_multi_head_scores() {
    run(
        "einsum_multi_head_scores",
        vec![w("k", &[2, 5, 2, 3]), w("q", &[2, 4, 2, 3])],
        vec![],
        "einsum(\"aecd,abcd->acbe\", k, q)",
        false,
    );
}

#[test]
fn einsum_multi_head_values() {
    run(
        "einsum_multi_head_values",
        vec![w("s", &[2, 2, 4, 5]), w("v", &[2, 5, 2, 3])],
        vec![],
        "einsum(\"acbe,aecd->abcd\", s, v)",
        false,
    );
}

#[test]
fn einsum_multi_head_output() {
    run(
        "einsum_multi_head_output",
        vec![w("a", &[2, 4, 2, 3]), w("k", &[2, 3, 5])],
        vec![],
        "einsum(\"abcd,cde->abe\", a, k)",
        false,
    );
}

#[test]
fn einsum_batch_projection() {
    run(
        "einsum_batch_projection",
        vec![w("P", &[3, 4, 2]), w("c", &[2, 5])],
        vec![w("G", &[4, 5])],
        "reduce_sum(einsum(\"btd,de->bte\", einsum(\"bi,itd->btd\", x, P), c) * G, axis = [1, 2])",
        true,
    );
}

#[test]
fn einsum_batch_reduction() {
    run(
        "einsum_batch_reduction",
        vec![w("P", &[3, 4, 2])],
        vec![w("G", &[2])],
        "reduce_sum(square(einsum(\"btd->bd\", einsum(\"bi,itd->btd\", x, P))) * G, axis = 1)",
        true,
    );
}

/// Keras MultiHeadAttention's four equations over the batch.
#[test]
fn einsum_batch_multi_head_attention() {
    run(
        "einsum_batch_multi_head_attention",
        vec![
            w("P", &[3, 4, 3]),
            w("Q", &[3, 2, 2]),
            w("K", &[3, 2, 2]),
            w("O", &[2, 2, 3]),
        ],
        vec![w("G", &[4, 3])],
        "reduce_sum(einsum(\"abcd,cde->abe\", einsum(\"acbe,aecd->abcd\", softmax(einsum(\"aecd,abcd->acbe\", einsum(\"abc,cde->abde\", einsum(\"bi,itd->btd\", x, P), K), einsum(\"abc,cde->abde\", einsum(\"bi,itd->btd\", x, P), Q))), einsum(\"abc,cde->abde\", einsum(\"bi,itd->btd\", x, P), K)), O) * G, axis = [1, 2])",
        true,
    );
}

#[test]
fn einsum_batch_scores_and_values() {
    run(
        "einsum_batch_scores_and_values",
        vec![w("P", &[3, 4, 2, 3]), w("R", &[3, 5, 2, 3])],
        vec![w("G", &[4, 2, 3])],
        "reduce_sum(einsum(\"bhqk,bkhd->bqhd\", einsum(\"bqhd,bkhd->bhqk\", einsum(\"bi,iqhd->bqhd\", x, P), einsum(\"bi,ikhd->bkhd\", x, R)), einsum(\"bi,ikhd->bkhd\", x, R)) * G, axis = [1, 2, 3])",
        true,
    );
}

/// `B` contracted: a sum over the examples.
#[test]
fn einsum_batch_contracted() {
    run(
        "einsum_batch_contracted",
        vec![w("c", &[3, 4])],
        vec![],
        "einsum(\"bi,bj->ij\", x @ c, w)",
        false,
    );
}

#[test]
fn matmul_two_batch_axes() {
    run(
        "matmul_two_batch_axes",
        vec![w("a", &[2, 3, 4, 5]), w("c", &[2, 3, 5, 2])],
        vec![],
        "a @ c",
        false,
    );
}

#[test]
fn matmul_two_batch_axes_transposed() {
    run(
        "matmul_two_batch_axes_transposed",
        vec![w("a", &[2, 3, 5, 4]), w("c", &[2, 3, 2, 5])],
        vec![],
        "matmul(a, c, transpose_a = true, transpose_b = true)",
        false,
    );
}

#[test]
fn matmul_broadcast_batch_axes() {
    run(
        "matmul_broadcast_batch_axes",
        vec![
            w("a", &[3, 4, 5]),
            w("c", &[2, 3, 5, 2]),
            w("d", &[1, 4, 5]),
            w("e", &[2, 5, 2]),
        ],
        vec![],
        "a @ c + reshape(d @ e, [2, 1, 4, 2])",
        false,
    );
}

#[test]
fn matmul_matrix_by_a_batch() {
    run(
        "matmul_matrix_by_a_batch",
        vec![w("a", &[4, 5]), w("c", &[2, 5, 3])],
        vec![],
        "matmul(a, c, transpose_b = false)",
        false,
    );
}

#[test]
fn matmul_batch_by_a_matrix_transposed() {
    run(
        "matmul_batch_by_a_matrix_transposed",
        vec![w("a", &[2, 5, 4]), w("c", &[5, 3])],
        vec![],
        "matmul(a, c, transpose_a = true)",
        false,
    );
}

/// `[B, H, T, D] @ [B, H, D, T]` and `[H, D, T] @ [B, H, T, D]` (broadcast
/// over the batch).
#[test]
fn matmul_batch_heads() {
    run(
        "matmul_batch_heads",
        vec![w("P", &[3, 2, 3, 2]), w("H", &[2, 2, 3])],
        vec![w("G", &[2, 3, 3]), w("F", &[2, 2, 2])],
        "reduce_sum(matmul(einsum(\"bi,ihtd->bhtd\", x, P), einsum(\"bi,ihtd->bhtd\", x, P), transpose_b = true) * G, axis = [1, 2, 3]) + reduce_sum((H @ einsum(\"bi,ihtd->bhtd\", x, P)) * F, axis = [1, 2, 3])",
        true,
    );
}

/// `einsum(equation, ..)` of parameters with the `shapes` (drawn values),
/// evaluated by the reference interpreter, against the sum written out
/// here from the equation (every assignment of the letters, the product of
/// the operands' elements added into the result's), independent of the
/// lowering.
fn equals_the_sum_it_names(equation: &str, shapes: &[&[usize]]) {
    let mut rng = super::Rng(seed(equation));
    let names = ["a", "c"];
    let mut params = String::new();
    let mut operands = Vec::new();
    for (k, dims) in shapes.iter().enumerate() {
        let vals = rng.values(dims.iter().product(), -1.0, 1.0, 0.0);
        params += &format!(
            "  {}: {dims:?} = constant(value = {})\n",
            names[k],
            super::literal(dims, &vals)
        );
        operands.push(specc_compiler::interp::Tensor::new(dims.to_vec(), vals));
    }
    let args = names[..shapes.len()].join(", ");
    let text = format!(
        "model sum\ndata synthetic(rows = 8, features = 3)\nfeatures {{ x = numeric(x0..x2) }}\nlabel label: int\nparams {{\n{params}}}\ny = einsum(\"{equation}\", {args})\nloss = reduce_sum(y * y) + mean(x[:, 0])\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n"
    );
    let model = specc_compiler::check(&specc_grammar::SourceFile::new("sum.spec", text.clone()))
        .unwrap_or_else(|d| {
            panic!(
                "{:?}\n{text}",
                d.iter().map(|d| &d.message).collect::<Vec<_>>()
            )
        });
    let y = model.bindings.iter().find(|b| b.0 == "y").unwrap().1;
    let env = specc_compiler::interp::Env {
        inputs: &[],
        vars: &operands,
        batch: 1,
        global_step: 0.0,
    };
    let got = specc_compiler::interp::eval(&model.graph, &env, &[y]).remove(0);

    let (lhs, out) = equation.split_once("->").unwrap();
    let subs: Vec<&[u8]> = lhs.split(',').map(str::as_bytes).collect();
    let mut letters: Vec<u8> = subs.concat();
    letters.sort_unstable();
    letters.dedup();
    let size = |c: u8| {
        let (k, i) = subs
            .iter()
            .enumerate()
            .find_map(|(k, s)| s.iter().position(|&d| d == c).map(|i| (k, i)))
            .unwrap();
        shapes[k][i]
    };
    let out_dims: Vec<usize> = out.bytes().map(size).collect();
    let mut want = vec![0.0; out_dims.iter().product()];
    let mut at = vec![0usize; letters.len()];
    let value = |s: &[u8], at: &[usize]| {
        s.iter().fold(0, |flat, &c| {
            let i = letters.iter().position(|&d| d == c).unwrap();
            flat * size(c) + at[i]
        })
    };
    'all: loop {
        let product: f64 = subs
            .iter()
            .zip(&operands)
            .map(|(s, t)| t.data[value(s, &at)])
            .product();
        want[value(out.as_bytes(), &at)] += product;
        for i in (0..letters.len()).rev() {
            at[i] += 1;
            if at[i] < size(letters[i]) {
                continue 'all;
            }
            at[i] = 0;
        }
        break;
    }
    assert_eq!(got.dims, out_dims, "{equation}");
    for (i, (g, w)) in got.data.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
            "{equation}[{i}]: {g} vs {w}"
        );
    }
}

macro_rules! sums {
    ($($name:ident: $equation:literal, [$($shape:expr),+];)*) => {
        $(
            #[test]
            fn $name() {
                equals_the_sum_it_names($equation, &[$(&$shape),+]);
            }
        )*
    };
}

sums! {
    sum_transpose: "ij->ji", [[3, 4]];
    sum_reduce_a_middle_axis: "bij->bj", [[2, 3, 4]];
    sum_of_all: "ij->", [[3, 4]];
    sum_matrix_product: "ij,jk->ik", [[3, 4], [4, 2]];
    sum_dot: "i,i->", [[4], [4]];
    sum_outer: "i,j->ij", [[4], [3]];
    sum_contracted_last_on_both_sides: "ij,kj->ik", [[3, 4], [2, 4]];
    sum_contracted_first_on_the_left: "ji,jk->ki", [[4, 3], [4, 2]];
    sum_a_letter_of_one_operand: "ijk,kl->il", [[2, 3, 4], [4, 5]];
    sum_projection: "btd,de->bte", [[2, 3, 4], [4, 5]];
    sum_attention_scores: "bqhd,bkhd->bhqk", [[2, 3, 2, 4], [2, 5, 2, 4]];
    sum_attention_values: "bhqk,bkhd->bqhd", [[2, 2, 3, 5], [2, 5, 2, 4]];
    sum_multi_head_projection: "abc,cde->abde", [[2, 3, 4], [4, 2, 3]];
    sum_multi_head_scores: "aecd,abcd->acbe", [[2, 5, 2, 3], [2, 4, 2, 3]];
    sum_multi_head_values: "acbe,aecd->abcd", [[2, 2, 4, 5], [2, 5, 2, 3]];
    sum_multi_head_output: "abcd,cde->abe", [[2, 4, 2, 3], [2, 3, 5]];
    sum_batch_letters_not_first: "ibj,jbk->bki", [[3, 2, 4], [4, 2, 5]];
    sum_an_operand_summed_to_a_scalar: "ij,k->i", [[3, 4], [5]];
    sum_a_scalar_on_the_left: "i,jk->kj", [[3], [4, 2]];
}
