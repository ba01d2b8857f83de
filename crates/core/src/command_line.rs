//! caldera commands shown to an operator to copy and run: a refused plan's way forward, how to
//! finish an aborted rollout. What is shown must run as shown, in a POSIX shell, and do what
//! the text says: every word is quoted where the shell would split or expand it (an image
//! named `Fedora CoreOS 40`, a stack named `a;b`), and a `--set` value reads back as the value
//! it was (the command line takes `KEY=JSON`, so an image named `2024` is written `"2024"`,
//! or it would arrive as the number 2024).

use crate::parameter_value::ParameterValue;
use std::borrow::Cow;
use std::fmt;

/// One caldera command line, built word by word and shown quoted for a POSIX shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine {
    words: Vec<String>,
}

impl CommandLine {
    /// `caldera` and its subcommand words (`["rollout", "start"]`).
    pub fn caldera(subcommand: &[&str]) -> CommandLine {
        let mut words = vec!["caldera".to_string()];
        words.extend(subcommand.iter().map(|w| w.to_string()));
        CommandLine { words }
    }

    /// A positional word (a target such as `STACK/GROUP`).
    pub fn arg(mut self, word: impl Into<String>) -> CommandLine {
        self.words.push(word.into());
        self
    }

    /// `--name value`.
    pub fn flag(mut self, name: &str, value: impl Into<String>) -> CommandLine {
        self.words.push(format!("--{name}"));
        self.words.push(value.into());
        self
    }

    /// `--name`, a switch without a value.
    pub fn switch(mut self, name: &str) -> CommandLine {
        self.words.push(format!("--{name}"));
        self
    }

    /// `--set KEY=VALUE`, written so that the command line reads `value` back.
    pub fn set(self, key: &str, value: &ParameterValue) -> CommandLine {
        self.flag("set", format!("{key}={}", value.command_word()))
    }

    /// `--set KEY=PLACEHOLDER`, for a value only the operator knows (`<previous value>`).
    pub fn set_placeholder(self, key: &str, placeholder: &str) -> CommandLine {
        self.flag("set", format!("{key}={placeholder}"))
    }
}

impl fmt::Display for CommandLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let quoted: Vec<Cow<'_, str>> = self.words.iter().map(|w| shell_word(w)).collect();
        f.write_str(&quoted.join(" "))
    }
}

/// `word` as one word of a POSIX shell: as it is when it holds only characters no shell
/// treats specially, else in single quotes (a `'` inside closed, escaped and reopened).
pub fn shell_word(word: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return Cow::Borrowed(word);
    }
    Cow::Owned(format!("'{}'", word.replace('\'', r"'\''")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_the_shell_would_split_or_expand_are_quoted() {
        assert_eq!(shell_word("prod/kube_minions"), "prod/kube_minions");
        assert_eq!(shell_word("Fedora CoreOS 40"), "'Fedora CoreOS 40'");
        assert_eq!(shell_word("a;b"), "'a;b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word("$HOME"), "'$HOME'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn a_set_value_reads_back_as_the_value_it_was() {
        let line = |json: &str| {
            CommandLine::caldera(&["rollout", "start"])
                .arg("s/g")
                .set("image", &ParameterValue::parse(json))
                .to_string()
        };
        assert_eq!(
            line("\"fcos-40\""),
            "caldera rollout start s/g --set image=fcos-40"
        );
        // A string the command line would read as a number, a boolean or null keeps its quotes.
        assert_eq!(
            line("\"2024\""),
            r#"caldera rollout start s/g --set 'image="2024"'"#
        );
        assert_eq!(
            line("\"true\""),
            r#"caldera rollout start s/g --set 'image="true"'"#
        );
        assert_eq!(line("3"), "caldera rollout start s/g --set image=3");
        assert_eq!(
            line("\"Fedora CoreOS 40\""),
            "caldera rollout start s/g --set 'image=Fedora CoreOS 40'"
        );
        assert_eq!(
            line(r#"{"a": 1}"#),
            r#"caldera rollout start s/g --set 'image={"a": 1}'"#
        );
    }
}
