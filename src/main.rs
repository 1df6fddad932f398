//! vkhip command line: parse, dispatch, and turn errors into one line and an exit code
//! (0 success, 1 a failed check or run, 2 a usage or environment problem, 128 + the signal's
//! number after an interrupt: 130 SIGINT, 143 SIGTERM, 129 SIGHUP). stdout goes through [`vkhip::output`], so a closed or full stdout never panics.

#![warn(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

use clap::Parser;
use std::process::ExitCode;
use vkhip::app;
use vkhip::cli::{Cli, Command};
use vkhip::vk::instance::ValidationCounts;

fn main() -> ExitCode {
    vkhip::profile::clock::mark_process_start();
    // Before any thread starts: it changes the environment (see its note).
    vkhip::compute::cuda::limit_hardware_queues();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp_millis()
        .init();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            vkhip::errln!("vkhip: error: {} (see vkhip --help)", vkhip::cli::error_line(&e));
            return ExitCode::from(2);
        }
    };
    if let Err(e) = vkhip::fault::check_env() {
        vkhip::errln!("vkhip: error: {e}");
        return ExitCode::from(2);
    }
    if matches!(cli.command, None | Some(Command::Verify(_)) | Some(Command::Bench(_))) {
        // Frame loops stop at the next frame and tear down in order, the benchmark matrix after
        // the run in progress; other commands keep the default (Ctrl-C ends them at once).
        app::frame::install_interrupt_handler();
    }
    let validation = match &cli.command {
        None => cli.run.common.validation,
        Some(Command::Verify(a)) => a.common.validation,
        Some(Command::BenchKernel(a)) => a.common.validation,
        Some(Command::Cycles(a)) => a.common.validation,
        _ => false,
    };
    let result = app::dispatch(cli);
    // Everything Vulkan is destroyed by now, so teardown messages are counted too. Only where the
    // layer really ran: without it the run stopped with an error, and no counts were gathered.
    if validation && vkhip::vk::instance::validation_ran() {
        vkhip::outln!("validation: {}", ValidationCounts::current());
    }
    let stdout_error = vkhip::output::finish();
    match result {
        Ok(code) => match stdout_error {
            // A closed stdout (EPIPE) is not reported: `finish` filters it out.
            Some(e) => {
                vkhip::errln!("vkhip: error: writing to stdout: {e}");
                ExitCode::from(2)
            }
            None => code,
        },
        Err(e) => {
            vkhip::errln!("vkhip: error: {}", one_line(&e));
            ExitCode::from(if app::is_environment_error(&e) { 2 } else { 1 })
        }
    }
}

/// The error chain as one line, like `{:#}`, but without a cause its parent already printed
/// (an error whose message embeds its `#[from]` source would otherwise say everything twice).
fn one_line(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if out.ends_with(&text) {
            continue;
        }
        if !out.is_empty() {
            out.push_str(": ");
        }
        out.push_str(&text);
    }
    out.lines().map(str::trim).collect::<Vec<_>>().join(" ")
}
