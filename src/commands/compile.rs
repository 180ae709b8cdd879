//! `specc compile SPEC --emit STAGE`: the text of one compiler stage.

use std::path::Path;

use specc_compiler::driver::{plan_model_with, Functions, Options};
use specc_compiler::ir::print::print_functions;
use specc_compiler::{codegen, plan};

use super::report;
use crate::{Failure, Stage};
use specc::spec::read_spec;

pub fn run(spec: &Path, stage: Stage, replicas: Option<u32>) -> Result<(), Failure> {
    let src = read_spec(spec)?;
    let text = emit(&src, stage, replicas).map_err(|d| report(&d, &src))?;
    print!("{text}");
    Ok(())
}

/// The text of `stage`; with `replicas`, of the step split for that many
/// data-parallel replicas (`replica_grad`, then `step`).
pub fn emit(
    src: &specc_grammar::SourceFile,
    stage: Stage,
    replicas: Option<u32>,
) -> Result<String, Vec<specc_grammar::Diagnostic>> {
    let options = Options {
        replicas,
        ..Options::default()
    };
    let plan_model = |src, which| plan_model_with(src, which, &options);
    Ok(match stage {
        Stage::Ast => specc_grammar::print::print_spec(&specc_compiler::parse(src)?),
        Stage::Ir => {
            let m = specc_compiler::check(src)?;
            let mut fs = vec![&m.functions.eval];
            fs.extend(m.functions.predict.as_ref());
            let mut text = print_functions(&m.graph, &fs);
            if !m.block_calls.is_empty() {
                text.push_str(&specc_compiler::model::print_block_calls(&m.block_calls));
            }
            text
        }
        Stage::Grad => {
            let m = specc_compiler::build_replicated(src, replicas)?;
            print_functions(&m.graph, &[m.functions.grad.as_ref().expect("built")])
        }
        Stage::Step => {
            let mut m = specc_compiler::build_replicated(src, replicas)?;
            specc_compiler::passes::optimize(&mut m);
            specc_compiler::verify::after("passes::optimize", || {
                specc_compiler::verify::ir::optimized(&m)
            })?;
            let mut fs: Vec<_> = m.functions.replica_grad.iter().collect();
            fs.extend(m.functions.step.as_ref());
            print_functions(&m.graph, &fs)
        }
        Stage::Plan => {
            let p = plan_model(src, Functions::TRAIN)?;
            // Each plan, then its one-thread twin (`Plan::twin`), if any.
            p.plans
                .iter()
                .flat_map(|pl| std::iter::once(pl).chain(pl.twin.as_deref()))
                .map(|pl| plan::print::print_plan(&p.model.graph, pl))
                .collect::<Vec<_>>()
                .join("\n")
        }
        Stage::Clif | Stage::Asm => {
            let p = plan_model(src, Functions::TRAIN)?;
            let mut out = Vec::new();
            for pl in &p.plans {
                let text = if matches!(stage, Stage::Asm) {
                    codegen::asm_text(&p.model.graph, pl)
                } else {
                    codegen::clif_text(&p.model.graph, pl)
                };
                out.push(text.map_err(|e| {
                    vec![specc_grammar::Diagnostic::new(
                        specc_grammar::Code::InternalError,
                        Default::default(),
                        e,
                    )]
                })?);
            }
            out.join("\n")
        }
    })
}
