//! Explanations of the codes of the exporters and of the compiler itself.

use super::Explanation;

pub(super) const TFLITE_UNSUPPORTED: Explanation = Explanation {
    text: "\
`specc export --format tflite` cannot express part of the model in
TensorFlow Lite: an operation without a TFLite builtin specc writes, or a
fetch that is not computed from the exported inputs (`--fetch` names a
binding the inputs do not determine, or an input that is not exported).
A recurrent layer (`dynamic_rnn`) exports only with a fixed batch
(`--batch N`: TF Lite's sequence operators keep their state in variable
tensors of that size), and an LSTM or basic cell only without an
`initial_state`, a sigmoid activation or its cell state `c` as a value.
The caret shows the operation; export another binding with `--fetch`, or
the model as a native object with `--format object`.",
    example: None,
};

pub(super) const TFLITE_MISSING_PARAMETER: Explanation = Explanation {
    text: "\
The checkpoint given to `specc export --format tflite` lacks a parameter the
exported model reads, or has it with another shape: it was written by
another spec, or before the spec's parameters changed. Export from a
checkpoint this spec trained (`specc inspect CHECKPOINT` lists what a
checkpoint holds).",
    example: None,
};

pub(super) const INTERNAL_ERROR: Explanation = Explanation {
    text: "\
specc failed in a way that is a bug in specc, not in the spec: a stage of
the compiler met a case it does not handle (the message says which, and
where when it knows). Please report it with the spec. A spec that could not
be compiled is never run.",
    example: None,
};

pub(super) const POISONED: Explanation = Explanation {
    text: "\
Internal: the code of an error that only repeats an earlier one (a name
whose definition already failed); such errors are dropped before the
diagnostics are shown.",
    example: None,
};
