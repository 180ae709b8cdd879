//! Quoted column names: headers that are not identifiers (`größe`,
//! `price ($)`, `Klasse der Probe`) are named in a spec as strings, for
//! features and for the label, and load the right columns.

use std::path::Path;

use specc_grammar::{Code, SourceFile};
use specc_runtime::data::{self, Values};

#[test]
fn quoted_headers_name_features_and_the_label() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let text = "model quoted\n\
        data csv(\"quoted_columns.csv\")\n\
        label y: int from \"Klasse der Probe\"\n\
        features { x = numeric(\"price ($)\", \"größe\") }\n\
        params { W: [2, 2] = zeros }\n\
        loss = mean(sparse_softmax_cross_entropy(y, x @ W))\n\
        optimizer gradient_descent(learning_rate = 0.1)\n\
        train { batch = 4, steps = 1 }\n";
    let model = specc_compiler::build(&SourceFile::new("quoted.spec", text))
        .unwrap_or_else(|d| panic!("{d:?}"));
    let ds = data::load(&model.data_source(&dir), &model.input_specs()).unwrap();
    let x = ds.input("x").unwrap();
    // The columns in the order the spec names them.
    assert_eq!(
        x.values,
        Values::F32(vec![2.0, 1.0, 4.0, -3.0, -6.0, 5.0, 8.0, 7.0])
    );
    assert_eq!(ds.input("y").unwrap().values, Values::I32(vec![0, 1, 0, 1]));
}

#[test]
fn an_unquoted_non_ascii_name_is_a_syntax_error_that_points_at_it() {
    let text = "label y: int from größe\n";
    let d = specc_grammar::parse(text).unwrap_err();
    assert_eq!(d.code, Code::ParseError);
    assert_eq!(&text[d.span.range()], "ö");
}
