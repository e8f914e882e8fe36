//! `sandbox`: whether this run's agents will be confined by the kernel (issue 31,
//! `docs/security.md`): the Landlock ABI and seccomp this kernel offers, and `[sandbox]`.

use super::{Ctx, Finding};

pub const SANDBOX: &str = "sandbox";

pub fn sandbox(cx: &Ctx) -> Vec<Finding> {
    let config = match &cx.config {
        Ok(c) => c,
        Err(_) => return vec![Finding::not_checked(SANDBOX, "config.toml does not load")],
    };
    let support = crate::sandbox::probe();
    // Whether a run would sandbox, as it decides (`required` is this check's own verdict).
    let why = match crate::sandbox::choose(config.sandbox.enabled(), false) {
        Ok(None) => Ok(()),
        Ok(Some(why)) | Err(why) => Err(why),
    };
    let finding = match why {
        Ok(()) => Finding::ok(
            SANDBOX,
            format!(
                "dispatches run in the kernel sandbox: Landlock ABI {} enforced (the kernel has \
                 {}), seccomp, no capabilities",
                support.enforced_abi(),
                support.landlock_abi
            ),
        ),
        Err(why) if config.sandbox.required() => Finding::needs_person(
            SANDBOX,
            format!(
                "agents run unsandboxed ({why}), and [sandbox] required = true: `splice run` \
                 refuses to dispatch"
            ),
            "run splice on Linux 6.12 or newer with Landlock enabled (the `lsm=` boot \
             parameter), or set [sandbox] required = false to run unconfined",
        ),
        Err(why) => Finding::warn(
            SANDBOX,
            format!(
                "agents run unsandboxed ({why}): the writer tells them apart by descent and \
                 credential alone, and they can write wherever you can (docs/security.md)"
            ),
            Some(
                "run splice on Linux 6.12 or newer with Landlock enabled, and set [sandbox] \
                 required = true to refuse unconfined runs"
                    .into(),
            ),
        ),
    };
    vec![finding]
}
