use std::path::Path;

use super::*;

fn end(state: &str, code: i32, signal: i32) -> JobEnd {
    JobEnd {
        state: JobState::parse(state),
        code: Some(code),
        signal: (signal != 0).then_some(signal),
    }
}

#[test]
fn the_batch_script_names_the_job_and_its_resources_and_quotes_the_argv_for_sh() {
    let r = Resources {
        partition: Some("debug".into()),
        cpus: Some(4),
        mem: Some("2G".into()),
        time: None,
    };
    let argv = vec![
        "claude".to_string(),
        "-p".to_string(),
        "it's a \"prompt\" with $HOME and `ticks`\nand a line".to_string(),
    ];
    let script = batch_script("splice-sp-a.1-implement-2", &r, 180, &argv);
    let lines: Vec<&str> = script.lines().collect();
    assert_eq!(lines[0], "#!/bin/sh");
    for want in [
        "#SBATCH --job-name=splice-sp-a.1-implement-2",
        "#SBATCH --time=3",
        "#SBATCH --partition=debug",
        "#SBATCH --cpus-per-task=4",
        "#SBATCH --mem=2G",
    ] {
        assert!(lines.contains(&want), "{want} missing from\n{script}");
    }
    // `sh` gives the command back its arguments byte for byte.
    let printed = std::process::Command::new("sh")
        .arg("-c")
        .arg(script.replace("exec ", "printf '%s\\0' "))
        .output()
        .unwrap();
    let got: Vec<String> = String::from_utf8(printed.stdout)
        .unwrap()
        .split_terminator('\0')
        .map(str::to_string)
        .collect();
    assert_eq!(got, argv);
    // Unset resources write no line.
    let bare = batch_script("n", &Resources::default(), 60, &argv);
    assert!(!bare.contains("--partition") && !bare.contains("--mem") && !bare.contains("--cpus"));
}

#[test]
fn the_time_limit_is_the_configured_one_else_the_step_timeout_rounded_up_to_a_minute() {
    let time_limit = |time: Option<u32>, timeout_s: u64| {
        Resources {
            time,
            ..Resources::default()
        }
        .minutes(timeout_s)
    };
    assert_eq!(time_limit(Some(90), 30), 90);
    assert_eq!(time_limit(None, 30), 1);
    assert_eq!(time_limit(None, 60), 1);
    assert_eq!(time_limit(None, 61), 2);
    assert_eq!(time_limit(None, 0), 1);
}

#[test]
fn sbatch_gets_the_paths_on_its_command_line_not_in_the_script() {
    let argv = sbatch_argv(
        Path::new("/s/run/a.sbatch"),
        Path::new("/s/run/a b.log"),
        Path::new("/s/wt/a"),
    );
    assert_eq!(argv[..2], ["sbatch", "--parsable"]);
    assert!(argv.contains(&"--output=/s/run/a b.log".to_string()));
    assert!(argv.contains(&"--chdir=/s/wt/a".to_string()));
    assert_eq!(argv.last().unwrap(), "/s/run/a.sbatch");
}

#[test]
fn each_end_maps_to_a_typed_exit_with_the_state_in_its_cause() {
    let ex = |e: &JobEnd, here: bool| exit_of("42", e, here);
    assert_eq!(
        ex(&end("COMPLETED", 0, 0), false),
        (ExitKind::Ok, Some(0), None)
    );
    let (k, c, cause) = ex(&end("FAILED", 3, 0), false);
    assert_eq!((k, c), (ExitKind::Failed, Some(3)));
    assert!(
        cause
            .unwrap()
            .contains("slurm job 42 ended FAILED (exit 3)")
    );
    let (k, _, cause) = ex(&end("FAILED", 0, 9), false);
    assert_eq!(k, ExitKind::Error);
    assert!(cause.unwrap().contains("signal 9"));
    assert_eq!(ex(&end("TIMEOUT", 0, 15), false).0, ExitKind::Timeout);
    // Cancelled here costs no attempt; by anyone else it does (an error).
    assert_eq!(ex(&end("CANCELLED", 0, 15), true).0, ExitKind::Cancelled);
    let (k, _, cause) = ex(&end("CANCELLED by 0", 0, 15), false);
    assert_eq!(k, ExitKind::Error);
    assert!(cause.unwrap().contains("CANCELLED (not by this runner)"));
    for (state, words) in [
        ("NODE_FAIL", "NODE_FAIL"),
        ("OUT_OF_MEMORY", "OUT_OF_MEMORY (over its --mem)"),
        ("PREEMPTED", "PREEMPTED (preempted)"),
        ("BOOT_FAIL", "BOOT_FAIL"),
    ] {
        let (k, _, cause) = ex(&end(state, 0, 0), false);
        assert_eq!(k, ExitKind::Error, "{state}");
        assert!(cause.unwrap().contains(words), "{state}");
    }
}

#[test]
fn states_read_as_slurm_prints_them_and_only_ends_count_as_ended() {
    for live in [
        "PENDING",
        "RUNNING",
        "COMPLETING",
        "CONFIGURING",
        "SUSPENDED",
        "R",
        "PD",
    ] {
        assert!(!JobState::parse(live).ended(), "{live}");
    }
    for done in [
        "COMPLETED",
        "FAILED",
        "TIMEOUT",
        "CANCELLED+",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
    ] {
        assert!(JobState::parse(done).ended(), "{done}");
    }
    assert_eq!(JobState::parse("cancelled by 1000"), JobState::Cancelled);
    assert_eq!(JobState::parse("WEIRD").name(), "WEIRD");
    assert!(!JobState::parse("WEIRD").ended());
}

#[test]
fn slurm_output_is_read_and_anything_else_is_not_a_state() {
    assert_eq!(parse_sbatch("1234\n").as_deref(), Some("1234"));
    assert_eq!(parse_sbatch("1234;cluster\n").as_deref(), Some("1234"));
    assert_eq!(parse_sbatch("Submitted batch job 12\n"), None);
    assert_eq!(parse_sbatch(""), None);
    let listed = parse_squeue("12|RUNNING|splice-a-implement-1\n13|COMPLETED|x|y\ngarbage\n");
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0].state, JobState::Running);
    assert_eq!(listed[1].name, "x|y");
    let shown = parse_scontrol(
        "JobId=7 JobName=splice-a-implement-1 UserId=root(0) JobState=FAILED Reason=NonZeroExitCode \
         Dependency=(null) ExitCode=2:0 RunTime=00:00:01\n",
    )
    .unwrap();
    assert_eq!(
        (shown.id.as_str(), shown.name.as_str()),
        ("7", "splice-a-implement-1")
    );
    assert_eq!(shown.end, end("FAILED", 2, 0));
    assert_eq!(
        parse_scontrol("slurm_load_jobs error: Invalid job id specified\n"),
        None
    );
    assert_eq!(
        parse_sacct("TIMEOUT|0:15\n").unwrap(),
        end("TIMEOUT", 0, 15)
    );
    assert_eq!(parse_sacct(""), None);
}
