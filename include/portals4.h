/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * <portals4.h>, the name the Portals 4 reference implementation installs
 * and Portals clients include (Open MPI's and Sandia OpenSHMEM's
 * --with-portals4=DIR look for DIR/include/portals4.h and
 * DIR/lib/libportals.so): spin's Portals 4 API, spin/portals4.h.
 */
#include <spin/portals4.h>
