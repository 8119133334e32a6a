//! The experiments of the command line for a caller that embeds resim (Python's
//! `resim.compare`, `resim.phase`, `resim.tune` and `resim.risk`): the words of a `resim
//! compare|phase|tune|risk` command line, read by the command line's own parser and turned
//! into the experiment's command by the same functions, so the defaults, the checks and the
//! error messages are those of the command line. The caller runs the experiment through the
//! library and reads its results as data; nothing is printed or written here.

use super::args::{Cli, Command};
use crate::experiment::{phase, risk, tune};
use clap::Parser as _;
use sim_core::SimDuration;

/// An experiment as a command line asks for it.
#[derive(Debug)]
pub enum Experiment {
    /// `resim compare`: its seeds, duration and threads (the sides are the caller's).
    Compare {
        /// `--seeds`: first and last.
        seeds: (u64, u64),
        /// `--duration`.
        duration: Option<SimDuration>,
        /// `-j`.
        jobs: Option<usize>,
    },
    /// `resim phase`.
    Phase(phase::Phase),
    /// `resim tune`.
    Tune(tune::Tune),
    /// `resim risk`, and how this process runs it.
    Risk(risk::Risk, risk::Flags),
}

/// `words`, a command line without the program's name (`["phase", "FILE", "--x", …]`), as the
/// experiment it asks for; the error is what `resim` would print (clap's message for a
/// malformed flag, the command's own line for a value it refuses).
pub fn experiment(words: &[String]) -> Result<Experiment, String> {
    let argv = std::iter::once("resim").chain(words.iter().map(String::as_str));
    let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string().trim_end().to_string())?;
    match cli.command {
        Some(Command::Compare {
            seeds,
            duration,
            jobs,
            ..
        }) => Ok(Experiment::Compare {
            seeds,
            duration,
            jobs: jobs.map(usize::from),
        }),
        Some(Command::Phase(args)) => super::phase_of(&args).map(Experiment::Phase),
        Some(Command::Tune(args)) => super::tune_of(&args).map(Experiment::Tune),
        Some(Command::Risk(args)) => {
            super::risk_of(&args).map(|(command, flags)| Experiment::Risk(command, flags))
        }
        _ => Err(format!(
            "{}: not an experiment; give compare, phase, tune or risk",
            words.first().map_or("", String::as_str)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn the_command_lines_defaults_and_checks_apply() {
        let Ok(Experiment::Phase(p)) = experiment(&words(
            "phase retry-storm --x services.db.workers=8,16 --y clients.users.load.rate=1/s",
        )) else {
            panic!("a phase map")
        };
        assert_eq!((p.seeds, p.x.values.len()), ((1, 5), 2));
        let Ok(Experiment::Compare { seeds, jobs, .. }) = experiment(&words("compare a b -j 2"))
        else {
            panic!("a comparison")
        };
        assert_eq!((seeds, jobs), ((1, 20), Some(2)));
        let refused = experiment(&words("risk x --event collapse --horizon 1h --rel-error 2"));
        assert_eq!(
            refused.unwrap_err(),
            "x: --rel-error 2: a ratio above 0 and below 1, e.g. 0.2 for ±20%"
        );
        assert!(
            experiment(&words("tune x"))
                .unwrap_err()
                .contains("--param")
        );
        assert!(
            experiment(&words("run x"))
                .unwrap_err()
                .contains("not an experiment")
        );
    }
}
