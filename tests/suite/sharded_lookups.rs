//! Sharded tables read by several lookups (`optim::sharded`,
//! `train::sharded`): one table looked up by several id inputs
//! (`shared_embeddings`, two `gather`s), and one id input looked up in
//! several sharded tables, against one process training on the global batch.
//!
//! The distinct ids over all the lookups linked by a table or an input are
//! fetched once; the table's gradient is one `IndexedSlices` of all its
//! lookups, as in one process (TF's sparse semantics under every optimizer);
//! the replicas' dense partial sums differ from one process's in the order
//! of addition, so the bar is 1e-6.

use crate::sharded::{refusal, sharded_matches_one_process};

/// One table shared by three hashed columns (2 MiB, large enough to be
/// sharded without a partitioner) under Adagrad, and a `linear_model` of two
/// of the same columns under FTRL (256 KiB tables, sharded too): the
/// columns' ids are looked up in the shared table and in their linear ones.
const SHARED: &str = r#"
model ctr_shared
data csv("data/ctr_sample.csv")
label click: float
features {
  user_id = categorical_column_with_hash_bucket(user_id, 65536)
  ad_id   = categorical_column_with_hash_bucket(ad_id, 65536)
  site    = categorical_column_with_hash_bucket(site, 65536)
  deep = input_layer(shared_embeddings([user_id, ad_id, site], dimension = 8))
  wide = linear_model(site, user_id)
}
block dnn(x) {
  h = layers.dense(x, 16, activation = relu)
  return layers.dense(h, 1, name = "logits")
}
logit = reshape(dnn(deep) + wide, [B])
loss = mean(sigmoid_cross_entropy(click, logit))
optimizer ftrl(learning_rate = 0.1, var_list = "linear_model/*")
optimizer adagrad(learning_rate = 0.05, var_list = ["dnn/*", "*shared_embedding/*"])
train { batch = 64, epochs = 1, shuffle = 0 }
ema 0.99
"#;

/// [`SHARED`] with small tables the spec partitions.
fn shared_partitioned() -> String {
    SHARED
        .replace("65536", "4096")
        .replace(
            "dimension = 8)",
            "dimension = 8, partitioner = fixed_size_partitioner(5))",
        )
        .replace(
            "linear_model(site, user_id)",
            "linear_model(site, user_id, partitioner = fixed_size_partitioner(3))",
        )
}

#[test]
fn two_replicas_shard_a_table_shared_by_three_columns() {
    sharded_matches_one_process(SHARED, 2, 20, 3, false);
}

#[test]
fn three_replicas_shard_a_table_shared_by_three_columns() {
    sharded_matches_one_process(SHARED, 3, 20, 3, false);
}

#[test]
fn two_replicas_shard_a_partitioned_table_shared_by_three_columns() {
    sharded_matches_one_process(&shared_partitioned(), 2, 20, 3, false);
}

#[test]
fn three_replicas_shard_a_partitioned_table_shared_by_three_columns() {
    sharded_matches_one_process(&shared_partitioned(), 3, 20, 3, false);
}

/// One id input looked up in two sharded tables of which only one reads
/// the other inputs: `ad_id` in the table shared with `user_id` and in its
/// own embedding (whose rows for `user_id`'s ids are never fetched).
#[test]
fn an_id_input_looked_up_in_two_sharded_tables() {
    let text = SHARED
        .replace(
            "shared_embeddings([user_id, ad_id, site], dimension = 8)",
            "shared_embeddings([user_id, ad_id], dimension = 8, \
             partitioner = fixed_size_partitioner(4)), \
             embedding_column(ad_id, dimension = 4, partitioner = fixed_size_partitioner(3))",
        )
        .replace(
            "\"*shared_embedding/*\"",
            "\"*shared_embedding/*\", \"input_layer/*\"",
        )
        .replace("linear_model(site, user_id)", "linear_model(site)");
    sharded_matches_one_process(&text, 2, 20, 3, false);
    sharded_matches_one_process(&text, 3, 20, 3, false);
}

/// A parameter read by two raw lookups of two id inputs, partitioned.
const TWO_GATHERS: &str = r#"
model two_gathers
data csv("data/ctr_sample.csv")
label click: float
features {
  hour  = integer(hour_of_day, num_buckets = 32)
  depth = integer(session_depth, num_buckets = 32)
}
params {
  E: [32, 4] = random_uniform(minval = -0.5, maxval = 0.5, seed = 3), partitioner = fixed_size_partitioner(3)
  w: [4, 1] = glorot_uniform(seed = 4)
  b: [1] = zeros
}
x = reshape(gather(E, hour), [B, 4]) + reshape(gather(E, depth), [B, 4])
logit = reshape(relu(x) @ w + b, [B])
loss = mean(sigmoid_cross_entropy(click, logit))
optimizer adagrad(learning_rate = 0.1)
train { batch = 64, epochs = 1, shuffle = 0 }
"#;

#[test]
fn two_replicas_shard_a_parameter_read_by_two_gathers() {
    sharded_matches_one_process(TWO_GATHERS, 2, 20, 1, false);
}

#[test]
fn three_replicas_shard_a_parameter_read_by_two_gathers() {
    sharded_matches_one_process(TWO_GATHERS, 3, 20, 1, false);
}

/// Several lookups, but one of ids the step computes (here constant): the
/// rows cannot be fetched before the step, so a partitioned table is
/// refused, at the parameter.
#[test]
fn a_partitioned_table_looked_up_by_ids_not_an_input_is_refused_with_a_caret() {
    let text = TWO_GATHERS.replace("reshape(gather(E, depth), [B, 4])", "gather(E, [3])");
    let d = refusal(&text, 2);
    assert!(
        d.message
            .contains("`E` is partitioned, and 2 replicas hold its rows apart")
            && d.message.contains("a lookup's ids are computed"),
        "{}",
        d.message
    );
    assert_eq!(&text[d.span.start as usize..d.span.end as usize], "E");
}

/// Adam's sparse update is not lazy: the dense one with a zero gradient on
/// the rows a batch does not look up, as one process applies it.
#[test]
fn two_replicas_shard_a_parameter_read_by_two_gathers_under_adam() {
    let text = TWO_GATHERS.replace(
        "optimizer adagrad(learning_rate = 0.1)",
        "optimizer adam(learning_rate = 0.01)",
    );
    sharded_matches_one_process(&text, 2, 20, 1, false);
}

/// Momentum's sparse update is lazy (the rows a batch does not look up keep
/// their values and slots): a table of two lookups stays sparse in one
/// process, as in TF, so the replicas train it alike.
#[test]
fn two_replicas_shard_a_partitioned_table_of_two_lookups_under_momentum() {
    let text = TWO_GATHERS.replace(
        "optimizer adagrad(learning_rate = 0.1)",
        "optimizer momentum(learning_rate = 0.1, momentum = 0.9)",
    );
    sharded_matches_one_process(&text, 2, 20, 1, false);
}

/// The same under FTRL, the table large and not partitioned: sharded by size.
#[test]
fn three_replicas_shard_a_large_table_of_two_lookups_under_ftrl() {
    let text = TWO_GATHERS
        .replace(
            "optimizer adagrad(learning_rate = 0.1)",
            "optimizer ftrl(learning_rate = 0.1, l1_regularization_strength = 0.01)",
        )
        .replace(
            "E: [32, 4] = random_uniform(minval = -0.5, maxval = 0.5, seed = 3), \
             partitioner = fixed_size_partitioner(3)",
            "E: [32768, 4] = random_uniform(minval = -0.5, maxval = 0.5, seed = 3)",
        );
    sharded_matches_one_process(&text, 3, 20, 1, false);
}
