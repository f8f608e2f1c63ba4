/* version of epar, shown by --version and recorded in run.json */
#ifndef EPAR_VERSION_H
#define EPAR_VERSION_H
#define EPAR_VERSION "0.1.0"
#endif
