//! The command line's own checks: help text, examples and value parsers.

use clap::{CommandFactory, Parser};

fn undescribed(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
    if !path.is_empty() && cmd.get_about().is_none() {
        missing.push(path.to_string());
    }
    for arg in cmd.get_arguments() {
        let id = arg.get_id().as_str();
        if id != "help" && id != "version" && arg.get_help().is_none() {
            missing.push(format!("{path} {id}"));
        }
    }
    for sub in cmd.get_subcommands() {
        undescribed(sub, &format!("{path} {}", sub.get_name()), missing);
    }
}

#[test]
fn megabytes_take_a_plain_number_or_a_size_with_its_unit() {
    assert_eq!(super::megabytes("48"), Ok(48.0));
    assert_eq!(super::megabytes("2GB"), Ok(2000.0));
    assert_eq!(super::megabytes("1 MiB"), Ok(1.048576));
    assert!(super::megabytes("2 parsecs").is_err());
    for bad in ["NaN", "inf", "-3", "0"] {
        assert!(
            super::megabytes(bad)
                .unwrap_err()
                .contains("is not a number of"),
            "{bad}"
        );
    }
}

#[test]
fn every_command_shows_examples_in_its_help() {
    let cli = super::Cli::command();
    let bare: Vec<&str> = cli
        .get_subcommands()
        .filter(|c| c.get_name() != "help")
        .filter(|c| {
            !c.get_after_help()
                .is_some_and(|h| h.to_string().starts_with("Examples:"))
        })
        .map(|c| c.get_name())
        .collect();
    assert!(bare.is_empty(), "no examples: {bare:?}");
}

/// Every example line of every help (`prepbench ...`, up to a `>` redirection or two spaces
/// before a comment) parses as a command line: examples cannot drift from the options.
#[test]
fn every_example_in_help_parses() {
    fn examples(cmd: &clap::Command, out: &mut Vec<String>) {
        if let Some(help) = cmd.get_after_help() {
            for line in help.to_string().lines() {
                if let Some(rest) = line.trim().strip_prefix("prepbench ") {
                    let command = rest.split("  ").next().unwrap_or_default();
                    let command = command.split(" > ").next().unwrap_or_default();
                    out.push(format!("prepbench {}", command.trim()));
                }
            }
        }
        for sub in cmd.get_subcommands() {
            examples(sub, out);
        }
    }
    let mut lines = Vec::new();
    examples(&super::Cli::command(), &mut lines);
    assert!(lines.len() >= 30, "{lines:?}");
    for line in lines {
        if let Err(e) = super::Cli::try_parse_from(line.split_whitespace()) {
            panic!("`{line}` does not parse: {e}");
        }
    }
}

#[test]
fn every_command_and_argument_is_described_in_help() {
    let mut missing = Vec::new();
    undescribed(&super::Cli::command(), "", &mut missing);
    assert!(missing.is_empty(), "no help text: {missing:?}");
}
