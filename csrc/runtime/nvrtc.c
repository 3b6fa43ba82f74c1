/* runtime/nvrtc.c: compiles one CUDA C program to a CUBIN with NVRTC.
 *
 * The NVRTC options are decided in one place, tileops_nvrtc_fixed_options(): the
 * architecture (sm_XYa for compute capability 9.0 and later, so Hopper gets sm_90a; sm_XY
 * before), -default-device, and --minimal when NVRTC is 12.4 or newer (the kernels include
 * no header and use no builtin header either, so the smaller front end is enough and
 * compiles several times faster). No -std (NVRTC's default dialect is used; the sources
 * are C-style), no -lineinfo, no --use_fast_math (rsqrtf and IEEE division keep their
 * normal accuracy). The caller's options (the -D specialisation) follow. The cache key in
 * modules.c hashes exactly this list, so a change here starts a fresh cache. */
#include "runtime/nvrtc.h"
#include "runtime/loader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tileops_nvrtc_arch_name(int major, int minor, char *buf, size_t size) {
    if (major >= 9)
        snprintf(buf, size, "sm_%d%da", major, minor);
    else
        snprintf(buf, size, "sm_%d%d", major, minor);
}

int tileops_nvrtc_fixed_options(int major, int minor, int nvrtc_major, int nvrtc_minor,
                                char *arch_buf, size_t arch_buf_size,
                                const char *out[TILEOPS_NVRTC_MAX_FIXED_OPTIONS]) {
    char arch[16];
    int n = 0;
    tileops_nvrtc_arch_name(major, minor, arch, sizeof arch);
    snprintf(arch_buf, arch_buf_size, "--gpu-architecture=%s", arch);
    out[n++] = arch_buf;
    out[n++] = "-default-device";
    if (nvrtc_major > 12 || (nvrtc_major == 12 && nvrtc_minor >= 4))
        out[n++] = "--minimal";
    return n;
}

/* "opt1 opt2 ..." into a malloc'ed string (NULL when out of memory). */
static char *join_options(const char *const *options, int count) {
    size_t total = 1;
    for (int i = 0; i < count; i++)
        total += strlen(options[i]) + 1;
    char *s = malloc(total);
    if (!s)
        return NULL;
    char *p = s;
    for (int i = 0; i < count; i++) {
        size_t n = strlen(options[i]);
        if (i > 0)
            *p++ = ' ';
        memcpy(p, options[i], n);
        p += n;
    }
    *p = '\0';
    return s;
}

static tileops_status_t nvrtc_call_failed(const tileops_cuda_api_t *api, const char *call,
                                          const char *kernel_name, nvrtcResult rc) {
    const char *text = api->nvrtcGetErrorString(rc);
    return tileops_fail(TILEOPS_ERR_COMPILE, "%s failed for kernel %s: %s (%d)", call,
                        kernel_name, text ? text : "unknown NVRTC error", (int)rc);
}

tileops_status_t tileops_nvrtc_compile(const char *source, size_t source_len,
                                       const char *kernel_name, const char *const *options,
                                       int num_options, int major, int minor, void **cubin,
                                       size_t *cubin_len, double *compile_ms) {
    const tileops_cuda_api_t *api = tileops_cuda_api();
    const char *fixed[TILEOPS_NVRTC_MAX_FIXED_OPTIONS];
    char arch_option[48];
    char program_name[96];
    tileops_status_t st = TILEOPS_OK;
    nvrtcProgram prog = NULL;
    char *src = NULL, *log = NULL, *joined = NULL, *bin = NULL;
    const char **all = NULL;
    size_t log_size = 0, bin_size = 0;
    nvrtcResult rc;

    *cubin = NULL;
    *cubin_len = 0;
    *compile_ms = 0.0;
    if (!api)
        return tileops_fail(TILEOPS_ERR_INTERNAL, "tileops_nvrtc_compile: runtime not loaded");

    int num_fixed = tileops_nvrtc_fixed_options(major, minor, api->nvrtc_major,
                                                api->nvrtc_minor, arch_option,
                                                sizeof arch_option, fixed);
    int total = num_fixed + num_options;
    all = malloc((size_t)total * sizeof *all);
    src = malloc(source_len + 1);
    if (!all || !src) {
        st = tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "NVRTC: out of host memory for kernel %s",
                          kernel_name);
        goto done;
    }
    for (int i = 0; i < num_fixed; i++)
        all[i] = fixed[i];
    for (int i = 0; i < num_options; i++)
        all[num_fixed + i] = options[i];
    memcpy(src, source, source_len);
    src[source_len] = '\0';
    snprintf(program_name, sizeof program_name, "%s.cu", kernel_name);

    double t0 = tileops_now_ms();
    rc = api->nvrtcCreateProgram(&prog, src, program_name, 0, NULL, NULL);
    if (rc != NVRTC_SUCCESS) {
        prog = NULL;
        st = nvrtc_call_failed(api, "nvrtcCreateProgram", kernel_name, rc);
        goto done;
    }
    nvrtcResult compile_rc = api->nvrtcCompileProgram(prog, total, all);
    if (api->nvrtcGetProgramLogSize(prog, &log_size) == NVRTC_SUCCESS && log_size > 0) {
        log = malloc(log_size + 1);
        if (log && api->nvrtcGetProgramLog(prog, log) == NVRTC_SUCCESS)
            log[log_size] = '\0';
        else if (log)
            log[0] = '\0';
    }
    if (compile_rc != NVRTC_SUCCESS) {
        const char *text = api->nvrtcGetErrorString(compile_rc);
        joined = join_options(all, total);
        st = tileops_fail(TILEOPS_ERR_COMPILE,
                          "NVRTC %d.%d could not compile kernel %s: %s\noptions: %s\nlog:\n%s",
                          api->nvrtc_major, api->nvrtc_minor, kernel_name,
                          text ? text : "unknown NVRTC error", joined ? joined : "(out of memory)",
                          log && log[0] ? log : "(empty)");
        goto done;
    }
    rc = api->nvrtcGetCUBINSize(prog, &bin_size);
    if (rc != NVRTC_SUCCESS) {
        st = nvrtc_call_failed(api, "nvrtcGetCUBINSize", kernel_name, rc);
        goto done;
    }
    if (bin_size == 0) {
        st = tileops_fail(TILEOPS_ERR_COMPILE, "NVRTC produced an empty CUBIN for kernel %s",
                          kernel_name);
        goto done;
    }
    bin = malloc(bin_size);
    if (!bin) {
        st = tileops_fail(TILEOPS_ERR_OUT_OF_MEMORY, "NVRTC: out of host memory for the CUBIN of %s",
                          kernel_name);
        goto done;
    }
    rc = api->nvrtcGetCUBIN(prog, bin);
    if (rc != NVRTC_SUCCESS) {
        st = nvrtc_call_failed(api, "nvrtcGetCUBIN", kernel_name, rc);
        goto done;
    }
    *compile_ms = tileops_now_ms() - t0;
    *cubin = bin;
    *cubin_len = bin_size;
    bin = NULL;

done:
    if (prog)
        (void)api->nvrtcDestroyProgram(&prog);
    free(bin);
    free(joined);
    free(log);
    free(src);
    free(all);
    return st;
}
