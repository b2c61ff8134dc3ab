//! Data-cache sizes, for choosing blocking factors.
//!
//! Sources, tried in order, the first that reports both L1d and L2 wins (the choice is
//! recorded in [`CacheInfo::source`]):
//! 1. Linux sysfs, `/sys/devices/system/cpu/cpu0/cache/index*/{level,type,size,
//!    shared_cpu_list,coherency_line_size}`;
//! 2. on x86-64, CPUID's deterministic cache parameters: leaf 4 (Intel) or leaf
//!    0x8000_001D (AMD, which answers leaf 4 with zeros);
//! 3. [`CacheInfo::DEFAULTS`].
//!
//! [`CacheInfo::detect`] also reads the CPUID vendor, for one trait of the caches that no size
//! says: whether prefetches scattered over many pages pay ([`CacheInfo::scattered_prefetch_slows`]).

use std::path::Path;

/// One cache level as seen from one core.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheLevel {
    /// Total size of one instance of this cache, in bytes.
    pub size_bytes: u64,
    /// How many logical CPUs share one instance (1 for a private cache; at least 1).
    pub shared_by: u32,
}

impl CacheLevel {
    /// The share of this cache one logical CPU can count on when all sharers are busy.
    pub fn per_logical_cpu(&self) -> u64 {
        self.size_bytes / u64::from(self.shared_by.max(1))
    }
}

/// Where [`CacheInfo`]'s numbers came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CacheSource {
    /// Linux sysfs.
    Sysfs,
    /// The x86 CPUID instruction.
    Cpuid,
    /// Neither answered; [`CacheInfo::DEFAULTS`] are used.
    Defaults,
}

/// The host's data caches: sizes, sharing and line size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CacheInfo {
    /// The level-1 data cache.
    pub l1d: CacheLevel,
    /// The level-2 cache.
    pub l2: CacheLevel,
    /// The level-3 cache, if the machine has (or reports) one.
    pub l3: Option<CacheLevel>,
    /// The L1d cache-line size in bytes.
    pub line_size: u32,
    /// Where the numbers came from.
    pub source: CacheSource,
    /// Whether software prefetches of lines in many pages at once slow this CPU's loads down
    /// rather than hiding their latency, so that code blocked for it leaves out those it can
    /// ([`accy_artifact::Blocking::skip_scattered_prefetch`]): set by [`CacheInfo::detect`]
    /// for Intel processors.
    pub scattered_prefetch_slows: bool,
}

impl CacheInfo {
    /// Used when nothing reports the caches: 32 KiB private L1d, 512 KiB private L2, no L3,
    /// 64-byte lines — at or below what current x86-64 and Arm server cores have, so
    /// blocking chosen from them is never too large.
    pub const DEFAULTS: CacheInfo = CacheInfo {
        l1d: CacheLevel {
            size_bytes: 32 << 10,
            shared_by: 1,
        },
        l2: CacheLevel {
            size_bytes: 512 << 10,
            shared_by: 1,
        },
        l3: None,
        line_size: 64,
        source: CacheSource::Defaults,
        scattered_prefetch_slows: false,
    };

    /// The cache sizes to block kernels for on this host, as the compiler takes them
    /// (`accy_lower::Options::caches`): the L1d's and L2's share per logical CPU, so that
    /// blocking never counts on cache another busy core is using; the last-level cache whole
    /// (what decides whether an output can stay cached at all), but at most
    /// [`LLC_PER_SHARER_MAX`] for each logical CPU said to share it; 0 when no source
    /// reported the caches (the compiler then assumes its default); and whether to skip
    /// scattered prefetches ([`CacheInfo::scattered_prefetch_slows`]).
    pub fn blocking(&self) -> accy_artifact::Blocking {
        accy_artifact::Blocking {
            l1d: self.l1d.per_logical_cpu(),
            l2: self.l2.per_logical_cpu(),
            llc: match (self.l3, self.source) {
                (Some(l3), _) => l3
                    .size_bytes
                    .min(u64::from(l3.shared_by.max(1)).saturating_mul(LLC_PER_SHARER_MAX)),
                (None, CacheSource::Defaults) => 0,
                // Detected, without an L3: the L2 is the last level.
                (None, _) => self.l2.size_bytes,
            },
            skip_scattered_prefetch: self.scattered_prefetch_slows,
        }
    }

    /// Detects the caches of CPU 0 (see the module doc for the order of sources).
    pub fn detect() -> CacheInfo {
        let caches = from_sysfs(Path::new("/sys/devices/system/cpu/cpu0/cache"))
            .or_else(from_cpuid)
            .unwrap_or(CacheInfo::DEFAULTS);
        CacheInfo {
            scattered_prefetch_slows: cpu_vendor().is_some_and(slowed_by_scattered_prefetch),
            ..caches
        }
    }
}

/// The most L3 cache [`CacheInfo::blocking`] counts on per logical CPU that shares it. Few
/// processors give a logical CPU more than 16 MiB of L3 (AMD's stacked-cache parts give
/// 12 MiB per core; a few EPYCs with 2 cores per chiplet give 24-48 MiB, which this caps,
/// so that only outputs from 16 MiB per CPU on are streamed and chained), so a larger share
/// means a virtual machine that reports the host socket's whole L3 but only its own CPUs as
/// sharing it, while the hypervisor's other cores, which it hides, use the rest. One such
/// guest (2 vCPUs of a server whose 480 MiB L3 it reports as shared by those 2) treated its
/// LLC as 480 MiB: it neither chained the passes of a 64 MiB layer norm nor streamed any
/// output: a 64 MiB copy took 6.0-6.5 ms and a 16384×1024 layer norm 13.8-15.2 ms; counted
/// as 32 MiB, 4.8-4.9 and 6.7-6.8 ms (`cargo xtask bench memory`, 1 thread, two rounds
/// each). A host without an L3 takes its L2 as the last level, uncapped.
pub const LLC_PER_SHARER_MAX: u64 = 16 << 20;

/// One cache description, whichever source it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    level: u32,
    /// Holds data (a data or unified cache, not an instruction cache).
    data: bool,
    cache: CacheLevel,
    line_size: Option<u32>,
}

/// Picks L1d, L2 and L3 from `entries`; `None` unless both L1d and L2 are present.
fn assemble(entries: &[Entry], source: CacheSource) -> Option<CacheInfo> {
    let find = |level| entries.iter().find(|e| e.level == level && e.data);
    let l1d = find(1)?;
    let l2 = find(2)?;
    Some(CacheInfo {
        l1d: l1d.cache,
        l2: l2.cache,
        l3: find(3).map(|e| e.cache),
        line_size: l1d.line_size.filter(|&n| n > 0).unwrap_or(64),
        source,
        scattered_prefetch_slows: false,
    })
}

/// Reads a sysfs cache directory (`…/cpu0/cache`); `None` if it is missing or incomplete.
pub(crate) fn from_sysfs(dir: &Path) -> Option<CacheInfo> {
    let read = |index: &Path, name: &str| std::fs::read_to_string(index.join(name)).ok();
    let mut entries = Vec::new();
    for item in std::fs::read_dir(dir).ok()?.flatten() {
        if !item.file_name().to_string_lossy().starts_with("index") {
            continue;
        }
        let index = item.path();
        let (Some(level), Some(kind), Some(size)) = (
            read(&index, "level"),
            read(&index, "type"),
            read(&index, "size"),
        ) else {
            continue;
        };
        let (Ok(level), Some(size_bytes)) = (level.trim().parse::<u32>(), parse_size(&size)) else {
            continue;
        };
        let shared_by = read(&index, "shared_cpu_list")
            .and_then(|s| count_cpu_list(&s))
            .unwrap_or(1);
        entries.push(Entry {
            level,
            data: matches!(kind.trim(), "Data" | "Unified"),
            cache: CacheLevel {
                size_bytes,
                shared_by,
            },
            line_size: read(&index, "coherency_line_size").and_then(|s| s.trim().parse().ok()),
        });
    }
    // read_dir order is unspecified; sort so the result does not depend on it.
    entries.sort_by_key(|e| (e.level, !e.data));
    assemble(&entries, CacheSource::Sysfs)
}

/// Parses a sysfs size such as `32K`, `1024K`, `16M` or `512` (bytes).
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last()? {
        (i, 'K') => (&text[..i], 1u64 << 10),
        (i, 'M') => (&text[..i], 1 << 20),
        (i, 'G') => (&text[..i], 1 << 30),
        _ => (text, 1),
    };
    digits
        .parse::<u64>()
        .ok()?
        .checked_mul(unit)
        .filter(|&n| n > 0)
}

/// Counts the CPUs in a sysfs CPU list such as `0-3,8,10-11`.
fn count_cpu_list(text: &str) -> Option<u32> {
    let mut count = 0u32;
    for part in text.trim().split(',') {
        let (first, last) = match part.split_once('-') {
            Some((a, b)) => (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?),
            None => {
                let n = part.parse::<u32>().ok()?;
                (n, n)
            }
        };
        count = count.checked_add(last.checked_sub(first)?.checked_add(1)?)?;
    }
    (count > 0).then_some(count)
}

/// Decodes one subleaf of CPUID leaf 4 or 0x8000_001D (same layout); `None` at the end of
/// the list (cache type 0).
fn decode_cpuid_cache(eax: u32, ebx: u32, ecx: u32) -> Option<Entry> {
    let kind = eax & 0x1F;
    if kind == 0 {
        return None;
    }
    let field =
        |value: u32, shift: u32, bits: u32| u64::from((value >> shift) & ((1 << bits) - 1)) + 1;
    let line = field(ebx, 0, 12);
    let size = field(ebx, 22, 10) * field(ebx, 12, 10) * line * (u64::from(ecx) + 1);
    Some(Entry {
        level: (eax >> 5) & 0x7,
        // 1 = data, 2 = instruction, 3 = unified.
        data: kind == 1 || kind == 3,
        cache: CacheLevel {
            size_bytes: size,
            shared_by: field(eax, 14, 12) as u32,
        },
        line_size: u32::try_from(line).ok(),
    })
}

#[cfg(target_arch = "x86_64")]
fn from_cpuid() -> Option<CacheInfo> {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    let read_leaf = |leaf: u32| -> Vec<Entry> {
        // Real CPUs list fewer than 8 caches; the bound only stops a broken hypervisor.
        (0..16)
            .map_while(|sub| {
                let r = __cpuid_count(leaf, sub);
                decode_cpuid_cache(r.eax, r.ebx, r.ecx)
            })
            .collect()
    };
    let mut entries = if __cpuid(0).eax >= 4 {
        read_leaf(4)
    } else {
        Vec::new()
    };
    let max_extended = __cpuid(0x8000_0000).eax;
    // AMD's leaf needs the TOPOEXT feature (CPUID 0x8000_0001 ECX bit 22).
    if entries.is_empty()
        && max_extended >= 0x8000_001D
        && __cpuid(0x8000_0001).ecx & (1 << 22) != 0
    {
        entries = read_leaf(0x8000_001D);
    }
    assemble(&entries, CacheSource::Cpuid)
}

#[cfg(not(target_arch = "x86_64"))]
fn from_cpuid() -> Option<CacheInfo> {
    None
}

/// Whether a processor whose CPUID vendor string is `vendor` is slower with prefetches of
/// lines in many pages at once: Intel's. On an Intel Xeon guest a 4096² f32 transpose, whose
/// tile fills each prefetch one line in each of 16 rows a page or more apart, ran 30-40%
/// faster without them (1 thread; any distance, even a quarter of them, was slower), on
/// AMD EPYCs they made it 10-15% faster.
fn slowed_by_scattered_prefetch(vendor: [u8; 12]) -> bool {
    &vendor == b"GenuineIntel"
}

/// The 12-byte CPUID vendor string (leaf 0, EBX EDX ECX), on x86-64.
#[cfg(target_arch = "x86_64")]
fn cpu_vendor() -> Option<[u8; 12]> {
    let r = std::arch::x86_64::__cpuid(0);
    let mut vendor = [0u8; 12];
    for (i, word) in [r.ebx, r.edx, r.ecx].into_iter().enumerate() {
        vendor[4 * i..4 * i + 4].copy_from_slice(&word.to_le_bytes());
    }
    Some(vendor)
}

#[cfg(not(target_arch = "x86_64"))]
fn cpu_vendor() -> Option<[u8; 12]> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_cpu_lists_parse() {
        assert_eq!(parse_size("32K\n"), Some(32 << 10));
        assert_eq!(parse_size("16M"), Some(16 << 20));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("0K"), None);
        assert_eq!(parse_size("K"), None);
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(parse_size("99999999999999999999G"), None);
        assert_eq!(count_cpu_list("0\n"), Some(1));
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list(""), None);
    }

    #[test]
    fn sysfs_fixture_is_read() {
        let dir = std::env::temp_dir().join(format!("accy-exec-cache-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let entries = [
            ("index0", "1", "Data", "48K", "0-1"),
            ("index1", "1", "Instruction", "32K", "0-1"),
            ("index2", "2", "Unified", "2048K", "0-1"),
            ("index3", "3", "Unified", "30M", "0-15"),
        ];
        for (name, level, kind, size, shared) in entries {
            let d = dir.join(name);
            std::fs::create_dir_all(&d).unwrap();
            for (file, text) in [
                ("level", level),
                ("type", kind),
                ("size", size),
                ("shared_cpu_list", shared),
            ] {
                std::fs::write(d.join(file), format!("{text}\n")).unwrap();
            }
        }
        std::fs::write(dir.join("index0/coherency_line_size"), "128\n").unwrap();
        let info = from_sysfs(&dir).unwrap();
        assert_eq!(info.source, CacheSource::Sysfs);
        assert_eq!(
            info.l1d,
            CacheLevel {
                size_bytes: 48 << 10,
                shared_by: 2
            }
        );
        assert_eq!(info.l2.size_bytes, 2 << 20);
        assert_eq!(
            info.l3,
            Some(CacheLevel {
                size_bytes: 30 << 20,
                shared_by: 16
            })
        );
        assert_eq!(info.l3.unwrap().per_logical_cpu(), (30 << 20) / 16);
        assert_eq!(info.line_size, 128);
        // The L1d and L2 are blocked for per logical CPU, the last level is taken whole.
        let b = info.blocking();
        assert_eq!((b.l1d, b.l2, b.llc), (24 << 10, 1 << 20, 30 << 20));
        // A guest that reports a server's whole L3 as shared by its own two CPUs.
        let guest = CacheInfo {
            l3: Some(CacheLevel {
                size_bytes: 480 << 20,
                shared_by: 2,
            }),
            ..info
        };
        assert_eq!(guest.blocking().llc, 2 * LLC_PER_SHARER_MAX);
        let no_l3 = CacheInfo { l3: None, ..info };
        assert_eq!(no_l3.blocking().llc, 2 << 20, "the L2 is the last level");
        // Unknown caches leave the last level to the compiler's default.
        assert_eq!(CacheInfo::DEFAULTS.blocking().llc, 0);
        // Detected caches keep the scattered prefetches; the vendor check may drop them.
        assert!(!b.skip_scattered_prefetch);
        let slowed = CacheInfo {
            scattered_prefetch_slows: true,
            ..info
        };
        assert!(slowed.blocking().skip_scattered_prefetch);
        // Without an L2 the source is incomplete and must not be used.
        std::fs::remove_dir_all(dir.join("index2")).unwrap();
        assert_eq!(from_sysfs(&dir), None);
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(from_sysfs(&dir), None);
    }

    #[test]
    fn cpuid_subleaf_decoding() {
        // A 32 KiB, 8-way, 64-byte-line, 64-set L1d shared by 2 threads (Zen 4's leaf
        // 0x8000_001D subleaf 0).
        let eax = 1 | (1 << 5) | (1 << 14);
        let ebx = 63 | (7 << 22); // 64-byte lines, 1 partition, 8 ways
        let e = decode_cpuid_cache(eax, ebx, 63).unwrap();
        assert_eq!(e.level, 1);
        assert!(e.data);
        assert_eq!(
            e.cache,
            CacheLevel {
                size_bytes: 32 << 10,
                shared_by: 2
            }
        );
        assert_eq!(e.line_size, Some(64));
        // Instruction cache: not data.
        assert!(!decode_cpuid_cache(2 | (1 << 5), ebx, 63).unwrap().data);
        // Type 0 ends the list.
        assert_eq!(decode_cpuid_cache(0, ebx, 63), None);
    }

    #[test]
    fn detection_gives_plausible_numbers() {
        let info = CacheInfo::detect();
        assert!(info.l1d.size_bytes >= 4 << 10, "{info:?}");
        assert!(info.l2.size_bytes >= info.l1d.size_bytes, "{info:?}");
        assert!(
            info.l1d.shared_by >= 1 && info.line_size.is_power_of_two(),
            "{info:?}"
        );
        #[cfg(target_arch = "x86_64")]
        if let Some(cpuid) = from_cpuid() {
            assert!(cpuid.l1d.size_bytes >= 4 << 10, "{cpuid:?}");
            assert_eq!(cpuid.source, CacheSource::Cpuid);
        }
    }

    #[test]
    fn only_intel_skips_scattered_prefetches() {
        assert!(slowed_by_scattered_prefetch(*b"GenuineIntel"));
        assert!(!slowed_by_scattered_prefetch(*b"AuthenticAMD"));
        assert!(!slowed_by_scattered_prefetch(*b"HygonGenuine"));
        #[cfg(target_arch = "x86_64")]
        {
            let vendor = cpu_vendor().expect("x86-64 has CPUID leaf 0");
            assert_eq!(
                CacheInfo::detect().scattered_prefetch_slows,
                &vendor == b"GenuineIntel"
            );
        }
    }
}
