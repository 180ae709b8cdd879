//! Bad equations and operands of `einsum`, and batches of `matmul` that do
//! not fit, are caret diagnostics (code, the offending text under the
//! caret), never panics.

use crate::common;

use specc_grammar::Code;

/// A spec with `y = EXPR` over `a: [3, 4]`, `c: [4, 5]`, `t: [2, 3, 4]`,
/// `h: [2, 3, 4, 5]`, `g: [3, 3, 5, 2]` and the batch `x: [B, 4]`.
fn spec(expr: &str) -> String {
    format!(
        "model errors\ndata synthetic(rows = 4, features = 4)\nfeatures {{ x = numeric(x0..x3) }}\nparams {{\n  a: [3, 4] = zeros\n  c: [4, 5] = zeros\n  t: [2, 3, 4] = zeros\n  h: [2, 3, 4, 5] = zeros\n  g: [3, 3, 5, 2] = zeros\n}}\ny = {expr}\nloss = reduce_sum(y * y)\noptimizer gradient_descent(learning_rate = 0.1)\ntrain {{ batch = 1, steps = 1 }}\n"
    )
}

/// Compiles `y = EXPR`, which must fail with `code` and a caret under `under`.
fn fails(expr: &str, code: Code, under: &str) {
    common::op_cases::assert_fails(&spec(expr), code, under);
}

#[test]
fn einsum_subscript_that_is_not_a_letter() {
    fails("einsum(\"ij,j1->i\", a, c)", Code::EinsumEquation, "1");
}

#[test]
fn einsum_with_two_arrows() {
    fails("einsum(\"ij->j->i\", a)", Code::EinsumEquation, "-");
}

#[test]
fn einsum_result_letter_in_no_operand() {
    fails("einsum(\"ij,jk->iz\", a, c)", Code::EinsumEquation, "z");
}

#[test]
fn einsum_result_letter_twice() {
    fails("einsum(\"ij,jk->kk\", a, c)", Code::EinsumEquation, "k");
}

#[test]
fn einsum_fewer_operands_than_the_equation() {
    fails(
        "einsum(\"ij,jk->ik\", a)",
        Code::WrongArity,
        "einsum(\"ij,jk->ik\", a)",
    );
}

#[test]
fn einsum_of_three_operands() {
    fails(
        "einsum(\"ij,jk,kl->il\", a, c, c)",
        Code::UnsupportedArgument,
        "c",
    );
}

#[test]
fn einsum_without_operands() {
    fails("einsum(\"ij->ji\")", Code::WrongArity, "einsum(\"ij->ji\")");
}

#[test]
fn einsum_without_an_equation() {
    fails("einsum()", Code::MissingArgument, "einsum()");
}

#[test]
fn einsum_equation_that_is_not_a_string() {
    fails("einsum(a, c)", Code::ArgumentType, "a");
}

#[test]
fn einsum_operand_rank_not_its_subscripts() {
    fails("einsum(\"bij,jk->bik\", a, c)", Code::BadShape, "a");
}

#[test]
fn einsum_letter_of_two_sizes() {
    fails("einsum(\"ij,ik->jk\", a, c)", Code::BadShape, "c");
}

#[test]
fn einsum_ellipsis() {
    fails(
        "einsum(\"...j,jk->...k\", a, c)",
        Code::UnsupportedArgument,
        ".",
    );
}

#[test]
fn einsum_diagonal() {
    fails("einsum(\"ii->i\", a)", Code::UnsupportedArgument, "i");
}

/// Moving the batch `B` is not lowered yet (a transpose keeps `B` first).
#[test]
fn einsum_moving_the_batch() {
    fails(
        "einsum(\"bd,de->eb\", x, c)",
        Code::UnsupportedArgument,
        "\"bd,de->eb\"",
    );
}

#[test]
fn matmul_batch_axes_that_do_not_broadcast() {
    fails("h @ g", Code::MatmulShape, "h @ g");
}

#[test]
fn matmul_batches_whose_matrices_do_not_fit() {
    fails("h @ h", Code::MatmulShape, "h @ h");
}

#[test]
fn matmul_of_a_vector() {
    fails(
        "matmul(t, reshape(c, [20]))",
        Code::MatmulShape,
        "reshape(c, [20])",
    );
}
