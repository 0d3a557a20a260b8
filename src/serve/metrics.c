/* placeholder: being written */
typedef int carma_placeholder_metrics;
