//! A test that cannot run here: skipped with a loud line, or failed where
//! CI asks for it.

/// Skip a test whose prerequisite is missing: panic when the environment
/// variable `required` is set (CI sets it, so a missing prerequisite fails
/// the run naming `missing` and `remedy`), else print a banner saying what
/// is skipped and how to run it.
pub fn skip_unless_required(required: &str, what: &str, missing: &str, remedy: &str) {
    assert!(
        std::env::var_os(required).is_none(),
        "{required} is set but {missing}: {remedy}"
    );
    eprintln!(
        "\n==============================================================\n\
         SKIPPED: {what} — {missing}.\n\
         {remedy}, or set {required}=1 to make this a failure.\n\
         ==============================================================\n"
    );
}
