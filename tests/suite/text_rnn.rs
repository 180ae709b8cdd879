//! Text into a recurrent layer: a CSV column of sentences split by `sep =
//! whitespace` into a `sequence_categorical_column_with_vocabulary_list`,
//! embedded per step by `sequence_input_layer(embedding_column(..))` (`[B,
//! T, d]` and its `sequence_length`), read by `dynamic_rnn(gru_cell(..),
//! emb, sequence_length = n)`, the final state classified by a dense layer.
//!
//! Two properties: the embedding table's gradient stays sparse through the
//! recurrent layer (Momentum's lazy update, TF's `SparseApplyMomentum`,
//! moves only the rows a batch names: a row named by an earlier batch but
//! not this one keeps its value and its slot bit for bit, where a dense
//! update would move it by `lr * momentum * accum`), and the model trains:
//! on generated sentences whose label is whether `good` comes before `bad`
//! (both words are in every sentence, so only their order decides: a bag of
//! words is at chance), it classifies held-out sentences.
//!
//! The same model's numbers (its logits and one SGD step's gradients, the
//! table's included) are checked against TF 2.21 in
//! `interop/test_text_rnn.py`, which builds the sequence column as TF1
//! contrib's `sequence_input_layer` did (TF 2.21 has no `SequenceFeatures`:
//! that layer is Keras 2's).

use specc::ndarray::{ArrayD, Axis, Slice};
use specc::Model;

/// The vocabulary: the two keywords, the filler words the sentences use,
/// and two words no sentence has.
const VOCAB: [&str; 10] = [
    "good", "bad", "the", "movie", "was", "plot", "and", "acting", "unseen", "never",
];
/// The most words in a sentence (T).
const T: usize = 8;
const TABLE: &str = "sequence_input_layer/text_embedding/embedding_weights";

/// The GRU reading the embedded words: its final state (16 wide).
const GRU: &str = "outputs, h = dynamic_rnn(gru_cell(16, kernel_initializer = glorot_uniform(seed = 2)), seq, sequence_length = n)";
/// A bag of words: the sum of the embedded words (6 wide; the steps past
/// a sentence's length are zeros).
const BAG: &str = "h = reduce_sum(seq, axis = 1)";

/// The spec: `encoder` binds `h` from `seq` and `n`, `width` wide.
fn spec(encoder: &str, width: usize, optimizer: &str, batch: usize) -> String {
    let vocab: Vec<String> = VOCAB.iter().map(|w| format!("\"{w}\"")).collect();
    format!(
        "model text_rnn
data csv(\"train.csv\")
label label: int
features {{
  words = sequence_categorical_column_with_vocabulary_list(text, [{}], num_oov_buckets = 1, sep = whitespace, max_values = {T})
  seq = sequence_input_layer(embedding_column(words, dimension = 6))
  n = sequence_length(seq)
}}
params {{
  W: [{width}, 2] = glorot_uniform(seed = 3)
  b: [2] = zeros
}}
{encoder}
logits = h @ W + b
loss = mean(sparse_softmax_cross_entropy(label, logits))
optimizer {optimizer}
train {{ batch = {batch}, steps = 1 }}
metrics {{ accuracy(label, argmax(logits)) }}
",
        vocab.join(", ")
    )
}

/// A splitmix64 stream: the generated sentences are the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A sentence of 2 to T words: `good` and `bad` once each, in a random
/// order at random places, the rest drawn from `fillers`; its label is 1
/// when `good` comes first.
fn sentence(rng: &mut Rng, fillers: &[&str]) -> (String, i32) {
    let len = 2 + rng.below(T - 1);
    let mut words: Vec<&str> = (0..len)
        .map(|_| fillers[rng.below(fillers.len())])
        .collect();
    let first = rng.below(len);
    let mut second = rng.below(len - 1);
    if second >= first {
        second += 1;
    }
    let good_first = rng.below(2) == 1;
    let (g, b) = if good_first {
        (first.min(second), first.max(second))
    } else {
        (first.max(second), first.min(second))
    };
    words[g] = "good";
    words[b] = "bad";
    // Runs of spaces and tabs: `sep = whitespace` splits on any of them.
    let text = words.join(if rng.below(4) == 0 { " \t " } else { " " });
    (text, i32::from(good_first))
}

/// `n` sentences with words from `fillers` as a CSV file in `dir`, read
/// through the model's columns.
fn sentences(
    model: &Model,
    dir: &std::path::Path,
    name: &str,
    rng: &mut Rng,
    n: usize,
    fillers: &[&str],
) -> Vec<(String, ArrayD<f32>)> {
    let mut csv = String::from("label,text\n");
    for _ in 0..n {
        let (text, label) = sentence(rng, fillers);
        csv.push_str(&format!("{label},\"{text}\"\n"));
    }
    let path = dir.join(name);
    std::fs::write(&path, csv).unwrap();
    model.read_csv(&path, true).unwrap()
}

/// Rows `lo..hi` of every array, as a batch.
fn rows(
    arrays: &[(String, ArrayD<f32>)],
    lo: usize,
    hi: usize,
) -> Vec<(&str, specc::ndarray::ArrayViewD<'_, f32>)> {
    arrays
        .iter()
        .map(|(n, a)| (n.as_str(), a.slice_axis(Axis(0), Slice::from(lo..hi))))
        .collect()
}

fn row(table: &ArrayD<f32>, word: &str) -> Vec<f32> {
    let i = VOCAB.iter().position(|w| *w == word).unwrap();
    table.index_axis(Axis(0), i).iter().copied().collect()
}

fn oov_row(table: &ArrayD<f32>) -> Vec<f32> {
    table
        .index_axis(Axis(0), VOCAB.len())
        .iter()
        .copied()
        .collect()
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// Two Momentum steps: the first batch's sentences use `the` and `movie`
/// beside the keywords, the second's `was` and `plot`. After the second
/// step the rows of `the` and `movie` and their `Momentum` slots are the
/// first step's, bit for bit (a dense update would move them by `lr *
/// momentum * accum`); `was` and `plot` moved; the rows no sentence names
/// (`and`, `acting`, `unseen`, `never`, the OOV bucket) are the initial
/// values with zero slots. The GRU's kernel, a dense variable, moves in
/// both steps.
#[test]
fn the_embedding_gradient_stays_sparse_through_the_gru() {
    let dir = specc_testkit::tmp::TempDir::new("text_rnn_sparse");
    let batch = 12;
    let mut model = Model::from_source(
        "text_rnn.spec",
        &spec(
            GRU,
            16,
            "momentum(learning_rate = 0.5, momentum = 0.9)",
            batch,
        ),
    )
    .unwrap();
    let slot = format!("{TABLE}/Momentum");
    let kernel = "rnn/gru_cell/gates/kernel";
    assert!(
        model
            .variables()
            .iter()
            .any(|(n, s)| *n == slot && *s == [VOCAB.len() + 1, 6]),
        "{:?}",
        model.variables()
    );
    let mut rng = Rng(28);
    let first = sentences(
        &model,
        &dir,
        "first.csv",
        &mut rng,
        batch,
        &["the", "movie"],
    );
    let second = sentences(
        &model,
        &dir,
        "second.csv",
        &mut rng,
        batch,
        &["was", "plot"],
    );

    let table0 = model.parameter(TABLE).unwrap();
    let kernel0 = model.parameter(kernel).unwrap();
    model.train_step(&rows(&first, 0, batch)).unwrap();
    let (table1, slot1) = (
        model.parameter(TABLE).unwrap(),
        model.parameter(&slot).unwrap(),
    );
    let kernel1 = model.parameter(kernel).unwrap();
    model.train_step(&rows(&second, 0, batch)).unwrap();
    let (table2, slot2) = (
        model.parameter(TABLE).unwrap(),
        model.parameter(&slot).unwrap(),
    );
    let kernel2 = model.parameter(kernel).unwrap();

    for w in ["the", "movie"] {
        assert_ne!(row(&table1, w), row(&table0, w), "step 1 moves `{w}`");
        assert!(
            row(&slot1, w).iter().any(|&v| v != 0.0),
            "step 1 fills `{w}`'s slot"
        );
        assert_eq!(
            bits(&row(&table2, w)),
            bits(&row(&table1, w)),
            "step 2 leaves `{w}`"
        );
        assert_eq!(
            bits(&row(&slot2, w)),
            bits(&row(&slot1, w)),
            "step 2 leaves `{w}`'s slot"
        );
    }
    for w in ["was", "plot", "good", "bad"] {
        assert_ne!(row(&table2, w), row(&table1, w), "step 2 moves `{w}`");
        assert_ne!(
            row(&slot2, w),
            row(&slot1, w),
            "step 2 updates `{w}`'s slot"
        );
    }
    for w in ["was", "plot"] {
        assert_eq!(
            bits(&row(&table1, w)),
            bits(&row(&table0, w)),
            "step 1 leaves `{w}`"
        );
    }
    for w in ["and", "acting", "unseen", "never"] {
        assert_eq!(
            bits(&row(&table2, w)),
            bits(&row(&table0, w)),
            "no step moves `{w}`"
        );
        assert!(
            row(&slot2, w).iter().all(|&v| v == 0.0),
            "`{w}`'s slot stays 0"
        );
    }
    assert_eq!(
        bits(&oov_row(&table2)),
        bits(&oov_row(&table0)),
        "the OOV row"
    );
    assert!(oov_row(&slot2).iter().all(|&v| v == 0.0));
    // The dense kernel moves in both steps (so do its slots: Momentum is dense there).
    assert_ne!(kernel1, kernel0);
    assert_ne!(kernel2, kernel1);
}

/// Adagrad (lazy for the table), batch 32, 200 steps over 2,048 generated
/// sentences; the accuracy on 512 held-out sentences.
fn trained_accuracy(encoder: &str, width: usize) -> f64 {
    let dir = specc_testkit::tmp::TempDir::new("text_rnn_train");
    let (batch, rows_) = (32, 2048);
    let mut model = Model::from_source(
        "text_rnn.spec",
        &spec(encoder, width, "adagrad(learning_rate = 0.3)", batch),
    )
    .unwrap();
    let fillers = ["the", "movie", "was", "plot", "and", "acting"];
    let mut rng = Rng(2026);
    let train = sentences(&model, &dir, "train.csv", &mut rng, rows_, &fillers);
    let held = sentences(&model, &dir, "held.csv", &mut rng, 512, &fillers);
    for step in 0..200 {
        let lo = (step * batch) % rows_;
        model.train_step(&rows(&train, lo, lo + batch)).unwrap();
    }
    let e = model.evaluate(&rows(&held, 0, 512)).unwrap();
    assert_eq!(e.metrics[0].0, "accuracy");
    e.metrics[0].1
}

/// The GRU classifies at least 99% of the held-out sentences by the order
/// of `good` and `bad`, which it carries across the filler words between
/// them (it reaches 100% after about 40 steps).
#[test]
fn a_gru_over_words_learns_which_keyword_comes_first() {
    let accuracy = trained_accuracy(GRU, 16);
    assert!(accuracy >= 0.99, "held-out accuracy {accuracy}");
}

/// The same words as a bag (the sum of their embeddings) cannot tell the
/// labels apart: each sentence has both keywords once, so the words'
/// counts are distributed alike for both labels, and the accuracy stays
/// near chance (0.5; one standard deviation over 512 sentences is 0.022).
#[test]
fn a_bag_of_the_same_words_stays_at_chance() {
    let accuracy = trained_accuracy(BAG, 6);
    assert!(
        (0.4..=0.6).contains(&accuracy),
        "held-out accuracy {accuracy}"
    );
}
