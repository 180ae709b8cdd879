//! `einsum` and `matmul` over several batch axes, by finite differences:
//! each equation of `tf.einsum` the sema lowering handles (a transpose, a
//! reduction, products with batch, free and contracted letters, Keras
//! MultiHeadAttention's four equations, the batch `B` as a batch, free or
//! contracted letter) and `tf.linalg.matmul` of several and broadcast batch
//! axes, with `transpose_a` / `transpose_b`. The compiled loss equals the
//! reference interpreter's, and the compiled gradients central differences
//! of it (`super::check`). Batched cases build their `[B, T, D]` operands
//! from the input `x` `[B, 3]` by an einsum with a parameter, and weight
//! the result by a constant of its per-example shape.

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
            expr,
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
