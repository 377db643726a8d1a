//! What a results file was measured on: the CPU, its caches, the kernel,
//! the build and when. A ratio to the floor moves with the machine (its
//! kernel's cost per request, its caches), so every `compare` results file
//! names its machine in its second line.

use std::path::Path;
use std::process::Command;
use std::time::SystemTime;

/// One line, such as `AMD EPYC, 2 CPUs; caches L1d 48 KiB, L1i 32 KiB, L2 1
/// MiB, L3 32 MiB (CPU 0's); Linux 6.1.0; build 0123abc;
/// 2026-12-02T18:40:00Z`.
/// What cannot be read (a system without `/proc` or `/sys`, a build outside
/// a git checkout) is left out.
pub fn describe() -> String {
    let mut parts = Vec::new();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    match cpu_model() {
        Some(m) => parts.push(format!("{m}, {cpus} CPUs")),
        None => parts.push(format!("{cpus} CPUs")),
    }
    let caches = caches(Path::new("/sys/devices/system/cpu/cpu0/cache"));
    if !caches.is_empty() {
        parts.push(format!("caches {} (CPU 0's)", caches.join(", ")));
    }
    if let Ok(k) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        parts.push(format!("Linux {}", k.trim()));
    }
    if let Some(b) = build() {
        parts.push(format!("build {b}"));
    }
    if let Ok(t) = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH) {
        parts.push(utc(t.as_secs()));
    }
    parts.join("; ")
}

fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix("model name"))
        .and_then(|rest| rest.split_once(':'))
        .map(|(_, m)| m.trim().to_string())
}

/// Each cache level of one CPU, as `L2 1 MiB` (`L1d`, `L1i` for the split
/// first level), in the order the kernel lists them.
fn caches(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for i in 0.. {
        let index = dir.join(format!("index{i}"));
        let read = |f: &str| std::fs::read_to_string(index.join(f)).map(|s| s.trim().to_string());
        let (Ok(level), Ok(kind), Ok(size)) = (read("level"), read("type"), read("size")) else {
            break;
        };
        let suffix = match kind.as_str() {
            "Data" => "d",
            "Instruction" => "i",
            _ => "",
        };
        out.push(format!("L{level}{suffix} {}", size_text(&size)));
    }
    out
}

/// The kernel's `2048K` as `2 MiB`; anything else as it is.
fn size_text(size: &str) -> String {
    match size.strip_suffix('K').and_then(|k| k.parse::<u64>().ok()) {
        Some(k) if k >= 1024 && k % 1024 == 0 => format!("{} MiB", k / 1024),
        Some(k) => format!("{k} KiB"),
        None => size.to_string(),
    }
}

/// The checkout's commit, with `+changes` when its files differ from it.
fn build() -> Option<String> {
    let dir = env!("CARGO_MANIFEST_DIR");
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let commit = git(&["rev-parse", "--short", "HEAD"])?;
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty {
        format!("{commit}+changes")
    } else {
        commit
    })
}

/// Seconds since the epoch as `2026-12-02T18:40:00Z` (the civil-from-days
/// algorithm of Howard Hinnant's date library).
fn utc(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(utc(1_796_236_877), "2026-12-02T18:41:17Z");
    }

    #[test]
    fn cache_sizes_read_as_people_write_them() {
        assert_eq!(size_text("48K"), "48 KiB");
        assert_eq!(size_text("2048K"), "2 MiB");
        assert_eq!(size_text("1536K"), "1536 KiB");
        assert_eq!(size_text("odd"), "odd");
    }

    #[test]
    fn a_cache_directory_lists_its_levels_in_order() {
        let dir = std::env::temp_dir().join(format!("zk-mock-caches-{}", std::process::id()));
        for (i, (level, kind, size)) in [
            ("1", "Data", "48K"),
            ("1", "Instruction", "32K"),
            ("2", "Unified", "1024K"),
        ]
        .iter()
        .enumerate()
        {
            let d = dir.join(format!("index{i}"));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join("level"), format!("{level}\n")).unwrap();
            std::fs::write(d.join("type"), format!("{kind}\n")).unwrap();
            std::fs::write(d.join("size"), format!("{size}\n")).unwrap();
        }
        assert_eq!(caches(&dir), ["L1d 48 KiB", "L1i 32 KiB", "L2 1 MiB"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
