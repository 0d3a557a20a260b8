/* placeholder: being written */
typedef int carma_placeholder_srt_cpu;
