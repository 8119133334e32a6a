//! The `resim` binary: the command line is the library's [`scenarios::cli`]; this file only
//! calls it, so that the command line is a layer of the crate like the others.

fn main() -> std::process::ExitCode {
    scenarios::cli::main()
}
