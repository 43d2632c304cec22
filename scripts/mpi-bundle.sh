#!/usr/bin/env bash
# Packs this machine's Open MPI (Debian's packages, installed by scripts/setup-mpi.sh) with a
# clusterlab binary built with --features mpi, for a machine that has no Open MPI and no
# internet (the GPU machine: glibc 2.36 or newer), so that benches/mpi_farm.sh runs there:
#
#   cargo build --release --locked --features mpi --bin clusterlab
#   bash scripts/mpi-bundle.sh .mpi-dev target/release/clusterlab   # DIR must be git-ignored
#   # there, with DIR carried:  bash DIR/run.sh   (RANKS, SIZE, SAMPLES, REPEAT as for the bench)
#
# The bundle holds mpirun, Open MPI's and PMIx's plugins, help texts and configuration, and
# every shared library they and the binary load except glibc's own; DIR/env.sh points Open MPI
# at them (OPAL_PREFIX and friends) and keeps the transports to shared memory.
set -euo pipefail
dir=${1:?usage: mpi-bundle.sh DIR BIN}
bin=${2:?usage: mpi-bundle.sh DIR BIN}
B=$dir/ompi
ml=/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3
[ -d "$ml" ] || { echo "mpi-bundle: no Open MPI here: run scripts/setup-mpi.sh first" >&2; exit 1; }
rm -rf "$dir" && mkdir -p "$B/lib" "$B/bin" "$B/plugins" "$B/pmix" "$B/share" "$B/etc"
cp /usr/bin/orterun "$B/bin/mpirun"
cp "$ml"/*.so "$B/plugins/"
cp /usr/lib/x86_64-linux-gnu/pmix2/lib/pmix/*.so "$B/pmix/" 2>/dev/null || true
cp -r /usr/share/openmpi/. "$B/share/"
cp -r /etc/openmpi/. "$B/etc/"
glibc='^(libc|libm|libdl|libpthread|librt|ld-linux|linux-vdso|libresolv|libutil)\.'
for f in "$B/bin/mpirun" "$B"/plugins/*.so "$B"/pmix/*.so "$bin"; do
    ldd "$f" 2>/dev/null | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
        echo "$name" | grep -Eq "$glibc" || cp -nL "$path" "$B/lib/$name"
    done
done
cp "$bin" "$dir/clusterlab"
mkdir -p "$dir/benches" && cp "$(dirname "$0")/../benches/mpi_farm.sh" "$dir/benches/"
cat > "$dir/env.sh" <<'ENV'
# Sourced before mpirun on a machine without Open MPI: the bundled one, shared memory only.
B=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/ompi
export PATH=$B/bin:$PATH
export LD_LIBRARY_PATH=$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPAL_PREFIX=$B OPAL_PKGDATADIR=$B/share OPAL_DATADIR=$B/share OPAL_SYSCONFDIR=$B/etc \
    OPAL_PKGLIBDIR=$B/plugins OPAL_LIBDIR=$B/lib
export OMPI_MCA_mca_base_component_path=$B/plugins PMIX_MCA_mca_base_component_path=$B/pmix
export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_osc=^ucx OMPI_MCA_mtl=^ofi,psm,psm2 \
    OMPI_MCA_btl_vader_single_copy_mechanism=none
if [ "$(id -u)" = 0 ]; then export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1; fi
ENV
cat > "$dir/run.sh" <<'RUN'
#!/usr/bin/env bash
# The farm benchmark with the bundled Open MPI (see scripts/mpi-bundle.sh).
set -euo pipefail
cd "$(dirname "$0")"
source ./env.sh
BIN=$PWD/clusterlab SIZE=${SIZE:-256} SAMPLES=${SAMPLES:-6000} REPEAT=${REPEAT:-2} \
    RANKS=${RANKS:-1 2 4 8 16} bash benches/mpi_farm.sh
RUN
chmod +x "$dir/run.sh"
du -sh "$dir"
