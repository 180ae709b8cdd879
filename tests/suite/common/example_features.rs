//! A model's inputs as the runtime's own transforms compute them from
//! `tf.train.Example` features, so tests train on the ids and weights a
//! real data set gives (padding slots included).

use specc_runtime::data::columns::{transform_for, Cell, CellRows};
use specc_runtime::data::{Dataset, InputData, Values, ValuesMut};
use specc_runtime::feature_column::FeatureInput;
use specc_runtime::io::example::Feature;

/// Every input of `model` over `rows` examples, each input's transform
/// reading `feature(key, row)` for the raw keys it needs (the feature-column
/// ids as i32, everything else as f32). Panics on a transform error (tests).
pub fn dataset_from_features<'a>(
    model: &specc_compiler::Model,
    rows: usize,
    feature: impl Fn(&str, usize) -> &'a Feature,
) -> Dataset {
    let mut inputs = Vec::new();
    for info in &model.inputs {
        let spec = &info.spec;
        let mut t = transform_for(spec);
        let mut cells: Vec<Cell<'_>> = Vec::new();
        for r in 0..rows {
            for c in &spec.columns {
                cells.push(Cell::Feature(Some(feature(c, r))));
            }
        }
        let cell_rows = CellRows::cells(&cells, spec.columns.len());
        let n = rows * t.width();
        let values = if matches!(spec.feature, Some(FeatureInput::Ids { .. })) {
            let mut v = vec![0i32; n];
            t.transform(&cell_rows, ValuesMut::I32(&mut v))
                .unwrap_or_else(|e| panic!("{}: {}", spec.name, e.message));
            Values::I32(v)
        } else {
            let mut v = vec![0f32; n];
            t.transform(&cell_rows, ValuesMut::F32(&mut v))
                .unwrap_or_else(|e| panic!("{}: {}", spec.name, e.message));
            Values::F32(v)
        };
        inputs.push(InputData::new(spec.name.clone(), t.width(), values));
    }
    Dataset::from_inputs(rows, inputs).unwrap()
}
