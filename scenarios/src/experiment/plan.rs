//! [`Plan`]: which runs a sweep makes. A [`GridAxis`] is one `--grid PATH=V1,V2,…`; the grid
//! points are their cartesian product (the first axis varies slowest), and each point runs
//! every seed. Every run has a stable index, `point × seeds + seed offset`, which is the order
//! of the output and what [`Partition`] splits on.

pub use super::partition::Partition;
use crate::format::overrides::{Flag, Override, Overrides, split_override};
use std::str::FromStr;

/// The most runs one sweep makes (grid points × seeds).
pub const RUNS_MAX: u64 = 100_000;

/// One `--grid PATH=V1,V2,…` (or `resim phase`'s `--x` or `--y`): the values an override path
/// takes in turn.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct GridAxis {
    /// The path, as for `--set`.
    pub path: String,
    /// The values as typed, RON each (a duration or a rate may go without quotes).
    pub values: Vec<String>,
    /// The flag that gave the axis, which errors about its values name.
    pub flag: Flag,
}

impl GridAxis {
    /// `PATH=V1,V2,…` as given to `flag`; the error is the reason alone (the caller names the
    /// flag and the text).
    pub fn parse(flag: Flag, text: &str) -> Result<GridAxis, String> {
        let (path, values) = split_override(text).ok_or_else(|| {
            "write an axis as PATH=V1,V2,…, e.g. services.api.workers=8,16,32".to_string()
        })?;
        let values = split_top_level(values);
        if values.iter().any(String::is_empty) {
            return Err("a grid value is empty".to_string());
        }
        // Each value must make a valid override.
        for v in &values {
            Override::parse(flag, &format!("{path}={v}"))?;
        }
        Ok(GridAxis {
            path: path.trim().to_string(),
            values,
            flag,
        })
    }
}

impl FromStr for GridAxis {
    type Err = String;

    /// A `--grid` axis.
    fn from_str(text: &str) -> Result<Self, String> {
        GridAxis::parse(Flag::Grid, text)
    }
}

/// Splits at the commas outside brackets and strings: `1,(a: 1, b: 2)` is two values.
fn split_top_level(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut quoted = false;
    let mut escaped = false;
    let mut current = String::new();
    for c in text.chars() {
        if quoted {
            quoted = c != '"' || escaped;
            escaped = c == '\\' && !escaped;
            current.push(c);
            continue;
        }
        match c {
            '"' => quoted = true,
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current.trim().to_string());
    out
}

/// The runs of a sweep: grid points × seeds, maybe one share of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// The overrides of each grid point (one point with none when there is no grid).
    pub points: Vec<Vec<Override>>,
    /// The first and last seed, both included (with `list`, its smallest and largest).
    pub seeds: (u64, u64),
    /// The seeds one by one, in their order, instead of the range `seeds` (Python's
    /// `resim.sweep(seeds=[…])`); `None` on the command line, whose `--seeds` is a range.
    pub list: Option<Vec<u64>>,
    /// The share of the runs this process makes.
    pub partition: Option<Partition>,
}

/// One run of a plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSpec {
    /// The stable index: `point × seeds + (seed − first seed)` (with a list of seeds, the
    /// seed's place in it instead of `seed − first seed`).
    pub index: u64,
    /// The grid point.
    pub point: usize,
    /// The seed.
    pub seed: u64,
}

impl Plan {
    /// The overrides of each grid point: the command's own (`base`), then the point's.
    pub fn overrides_each(&self, base: &Overrides) -> Vec<Overrides> {
        self.points
            .iter()
            .map(|point| {
                let mut overrides = base.clone();
                overrides.sets.extend(point.iter().cloned());
                overrides
            })
            .collect()
    }

    /// The plan of `axes` over `seeds`; an error when it would make more than [`RUNS_MAX`] runs.
    pub fn new(
        axes: &[GridAxis],
        seeds: (u64, u64),
        partition: Option<Partition>,
    ) -> Result<Plan, String> {
        let mut points: Vec<Vec<Override>> = vec![Vec::new()];
        for axis in axes {
            let mut next = Vec::with_capacity(points.len() * axis.values.len());
            for p in &points {
                for v in &axis.values {
                    let mut q = p.clone();
                    q.push(Override {
                        path: axis.path.clone(),
                        value: v.clone(),
                        flag: axis.flag,
                    });
                    next.push(q);
                }
                if next.len() as u64 > RUNS_MAX {
                    return Err(format!("the grid has more than {RUNS_MAX} points"));
                }
            }
            points = next;
        }
        let plan = Plan {
            points,
            seeds,
            list: None,
            partition,
        };
        if plan.runs() > RUNS_MAX {
            return Err(format!(
                "{} grid points × {} seeds is {} runs; at most {RUNS_MAX} per sweep (split it with --partition, or sweep fewer)",
                plan.points.len(),
                plan.seed_count(),
                plan.runs()
            ));
        }
        Ok(plan)
    }

    /// The plan of `axes` over the seeds `list`, in its order, each run the one its seed
    /// makes alone; an error when `list` is empty or gives a seed twice.
    pub fn of_seeds(
        axes: &[GridAxis],
        list: Vec<u64>,
        partition: Option<Partition>,
    ) -> Result<Plan, String> {
        let mut sorted = list.clone();
        sorted.sort_unstable();
        let (Some(&low), Some(&high)) = (sorted.first(), sorted.last()) else {
            return Err("no seed: give at least one".to_string());
        };
        if let Some(w) = sorted.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!(
                "seed {} is given twice: give each seed once (a seed makes the same run each time)",
                w[0]
            ));
        }
        let plan = Plan::new(axes, (0, list.len() as u64 - 1), partition)?;
        Ok(Plan {
            seeds: (low, high),
            list: Some(list),
            ..plan
        })
    }

    /// Seeds per grid point.
    pub fn seed_count(&self) -> u64 {
        match &self.list {
            Some(list) => list.len() as u64,
            None => self.seeds.1 - self.seeds.0 + 1,
        }
    }

    /// The runs of the whole sweep, all partitions together.
    pub fn runs(&self) -> u64 {
        self.points.len() as u64 * self.seed_count()
    }

    /// The runs this process makes, in index order.
    pub fn specs(&self) -> Vec<RunSpec> {
        let n = self.seed_count();
        (0..self.runs())
            .filter(|&i| self.partition.is_none_or(|p| p.contains(i)))
            .map(|index| RunSpec {
                index,
                point: (index / n) as usize,
                seed: match &self.list {
                    Some(list) => list[(index % n) as usize],
                    None => self.seeds.0 + index % n,
                },
            })
            .collect()
    }

    /// How a grid point reads: `services.db.workers=16 clients.users.timeout="1s"`, empty
    /// without a grid.
    pub fn label(&self, point: usize) -> String {
        let words: Vec<String> = self.points[point].iter().map(Override::to_string).collect();
        words.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_values_split_outside_brackets_and_strings() {
        let a: GridAxis = "services.api.queue=(capacity: 1, policy: Fifo),(capacity: 2)"
            .parse()
            .unwrap();
        assert_eq!(a.values, ["(capacity: 1, policy: Fifo)", "(capacity: 2)"]);
        let a: GridAxis = "name=\"a,b\",\"c\"".parse().unwrap();
        assert_eq!(a.values, ["\"a,b\"", "\"c\""]);
        assert!("x=1,,2".parse::<GridAxis>().is_err());
        assert!("x".parse::<GridAxis>().is_err());
    }

    #[test]
    fn runs_are_indexed_point_major_and_partitions_cover_them_once() {
        let axes: Vec<GridAxis> = vec!["a=1,2".parse().unwrap(), "b=x,y,z".parse().unwrap()];
        let plan = Plan::new(&axes, (5, 8), None).unwrap();
        assert_eq!(plan.points.len(), 6);
        assert_eq!(plan.label(0), "a=1 b=x");
        assert_eq!(plan.label(5), "a=2 b=z");
        let all = plan.specs();
        assert_eq!(all.len(), 24);
        assert_eq!((all[5].point, all[5].seed), (1, 6));
        let mut joined: Vec<u64> = (1..=3)
            .flat_map(|k| {
                let p = Plan {
                    partition: Some(Partition { part: k, parts: 3 }),
                    ..plan.clone()
                };
                p.specs().into_iter().map(|s| s.index)
            })
            .collect();
        joined.sort_unstable();
        assert_eq!(joined, (0..24).collect::<Vec<_>>());
    }

    #[test]
    fn a_list_of_seeds_runs_each_in_its_order_once() {
        let axes: Vec<GridAxis> = vec!["a=1,2".parse().unwrap()];
        let plan = Plan::of_seeds(&axes, vec![9, 2, 40], None).unwrap();
        let specs: Vec<(u64, usize, u64)> = plan
            .specs()
            .iter()
            .map(|s| (s.index, s.point, s.seed))
            .collect();
        assert_eq!(
            specs,
            [
                (0, 0, 9),
                (1, 0, 2),
                (2, 0, 40),
                (3, 1, 9),
                (4, 1, 2),
                (5, 1, 40)
            ]
        );
        assert_eq!((plan.runs(), plan.seeds), (6, (2, 40)));
        let twice = Plan::of_seeds(&axes, vec![3, 5, 3], None).unwrap_err();
        assert!(twice.starts_with("seed 3 is given twice"), "{twice}");
        assert!(Plan::of_seeds(&axes, vec![], None).is_err());
    }
}
