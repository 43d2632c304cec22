//! `clusterlab generate`: a site-percolation lattice from MT19937.

use crate::args::{
    check_output_folder, lattice_size, parse_probability, print_json, print_stdout, OutputArgs,
    Stage,
};
use anyhow::Result;
use clap::Args;
use clusterlab::io::{self, Format, Lattice};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Lattice size: HxW (height x width, e.g. 512x1024) or L for a square L x L lattice; at
    /// most 2^32 − 2 sites, and one byte a site must fit in the machine's memory.
    #[arg(long, value_name = "HxW|L", value_parser = |s: &str| lattice_size(s, 1))]
    size: (usize, usize),

    /// Occupation probability of each site (or block), from 0 to 1.
    #[arg(short, long = "p", value_name = "P", value_parser = parse_probability, allow_negative_numbers = true)]
    p: f64,

    /// Granularity: occupy whole GxG blocks, each with probability P (density x granularity
    /// benchmark of Hennequin et al.), from 1 to 65536. 1 = independent sites.
    #[arg(short, long, value_name = "G", default_value_t = 1, value_parser = parse_grain)]
    grain: usize,

    /// Seed of the MT19937 generator, from 0 to 4294967295 (one next_u32() draw per site or
    /// block, in raster order; occupied when u / 2^32 < P).
    #[arg(long, value_name = "S", default_value_t = 1)]
    seed: u32,

    /// Where to write the lattice (.npy, or dataset /lattice in .h5/.hdf5), replaced atomically.
    #[arg(short, long, value_name = "PATH")]
    output: PathBuf,

    #[command(flatten)]
    out: OutputArgs,

    /// Print the summary as one JSON object (keys: command, height, width, p, grain, seed,
    /// occupied, occupied_fraction, output).
    #[arg(long)]
    json: bool,
}

fn parse_grain(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(g) if (1..=65536).contains(&g) => Ok(g),
        _ => Err(format!("expected a block size from 1 to 65536, not {s:?}")),
    }
}

pub fn run(args: GenerateArgs) -> Result<()> {
    Format::from_path(&args.output)?;
    check_output_folder(&args.output)?;
    let (h, w) = args.size;

    let stage = Stage::new(args.out.quiet || args.json);
    stage.set(format!("generating {h}x{w} lattice"));
    let array = clusterlab::generate::percolation(h, w, args.p, args.grain, args.seed);
    let lattice = Lattice::U8(array);
    stage.set(format!("writing {}", args.output.display()));
    io::write_lattice_with(&args.output, &lattice, &args.out.write_options())?;
    drop(stage);

    let occupied = lattice.occupied();
    if args.json {
        print_json(&serde_json::json!({
            "command": "generate",
            "height": h,
            "width": w,
            "p": args.p,
            "grain": args.grain,
            "seed": args.seed,
            "occupied": occupied,
            "occupied_fraction": occupied as f64 / (h * w) as f64,
            "output": args.output.display().to_string(),
        }));
    } else if !args.out.quiet {
        print_stdout(&format!(
            "generated  {h}x{w} site percolation, p = {}, grain {}, seed {}\n\
             occupied   {:.4} ({occupied} sites)\n\
             output     {}\n",
            args.p,
            args.grain,
            args.seed,
            occupied as f64 / (h * w) as f64,
            args.output.display(),
        ));
    }
    Ok(())
}
