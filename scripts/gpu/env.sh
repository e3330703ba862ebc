# shellcheck shell=bash
# env.sh: source it (bash) from anywhere to run the bundle's programs by
# hand: `. pcc-gpu/env.sh; pcc-run plan.bin --device gpu ...` (run-gpu-check
# sources it too). Sets PATH (bin/, and usr/bin/ for mpirun), Open MPI and
# PMIx relocated into the bundle (OPAL_PREFIX, PMIX_*: strace showed no
# file of theirs read outside it but /etc/openmpi's optional settings),
# hwloc without plugins (a machine's own may not fit the bundled hwloc), MPI
# singletons for one rank, and LD_LIBRARY_PATH: the bundle's libraries,
# lib/fallback (libstdc++, libgcc_s, libz) only where the machine lacks
# them or bin/pcc needs them, and the folders of libnccl and libcublasLt,
# found by pcc_gpu_find_lib (ldconfig, PCC_CUDA_LIBS, CUDA_HOME, the CUDA
# toolkit, pip's nvidia/*/lib) into PCC_NCCL and PCC_CUBLASLT (empty: not
# found).
PCC_GPU=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_p=$PCC_GPU/usr/lib/x86_64-linux-gnu/pmix2
export OPAL_PREFIX=$PCC_GPU/usr PMIX_PREFIX=$_p PMIX_LIBDIR=$_p/lib PMIX_PKGLIBDIR=$_p/lib/pmix PMIX_DATADIR=$_p/share
export PMIX_PKGDATADIR=$_p/share/pmix PMIX_SYSCONFDIR=$_p/share PMIX_MCA_mca_base_component_path=$_p/lib/pmix
export HWLOC_PLUGINS_PATH=$PCC_GPU/usr/lib/hwloc-none
export OMPI_MCA_ess_singleton_isolated=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_mca_base_component_show_load_errors=0 OMPI_MCA_plm_rsh_agent=false
export PATH=$PCC_GPU/bin:$PCC_GPU/usr/bin:$PATH
# ldconfig lives in /sbin, outside a user's PATH on some systems
pcc_gpu_ldconfig() { "$(command -v ldconfig || echo /sbin/ldconfig)" -p 2>/dev/null; }

pcc_gpu_find_lib() { # NAME...: the first found
	local n d p dirs=()
	for n in "$@"; do
		[ -z "${PCC_CUDA_LIBS:-}" ] || [ ! -e "$PCC_CUDA_LIBS/$n" ] || { echo "$PCC_CUDA_LIBS/$n"; return; }
	done
	for n in "$@"; do
		p=$(pcc_gpu_ldconfig | awk -v n="$n" '$1 == n { print $NF; exit }')
		[ -z "$p" ] || { echo "$p"; return; }
	done
	dirs=(${CUDA_HOME:+$CUDA_HOME/lib64} /usr/local/cuda/lib64 /usr/local/cuda*/lib64
		/usr/local/cuda*/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/lib)
	for d in $(python3 -c 'import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null); do
		dirs+=("$d"/nvidia/*/lib)
	done
	for n in "$@"; do
		for d in "${dirs[@]}"; do
			[ ! -e "$d/$n" ] || { echo "$d/$n"; return; }
		done
	done
	for n in "$@"; do
		p=$(find /usr/local /opt /usr/lib /usr/lib64 -name "$n" 2>/dev/null | head -1)
		[ -z "$p" ] || { echo "$p"; return; }
	done
}

_l=$PCC_GPU/lib _fb=0
for _f in "$PCC_GPU"/lib/fallback/*; do
	[ -e "$_f" ] || continue
	pcc_gpu_ldconfig | grep -q "^[[:space:]]*${_f##*/} " || _fb=1
done
# the bundled libstdc++ is newer than a machine's that pcc cannot start with
if [ $_fb = 0 ] && [ -x "$PCC_GPU/bin/pcc" ] && ! LD_LIBRARY_PATH=$_l "$PCC_GPU/bin/pcc" version >/dev/null 2>&1; then
	_fb=1
fi
[ $_fb = 0 ] || _l=$_l:$PCC_GPU/lib/fallback
PCC_NCCL=$(pcc_gpu_find_lib libnccl.so.2 libnccl.so)
PCC_CUBLASLT=$(pcc_gpu_find_lib libcublasLt.so.13 libcublasLt.so.12 libcublasLt.so)
[ -z "$PCC_NCCL" ] || _l=$_l:${PCC_NCCL%/*}
[ -z "$PCC_CUBLASLT" ] || [ "${PCC_CUBLASLT%/*}" = "${PCC_NCCL%/*}" ] || _l=$_l:${PCC_CUBLASLT%/*}
case ":${LD_LIBRARY_PATH:-}:" in
*":$PCC_GPU/lib:"*) ;; # sourced twice
*) export LD_LIBRARY_PATH=$_l${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ;;
esac
unset _p _l _f _fb
