// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A rank of a PMIx job that is not a Portals process but publishes VALUE
 * under libspin's key (spin.ipv4), as a hostile or broken rank would, and
 * takes part in the fence (ptl/mpirun_pmix_forged: the other ranks'
 * PtlNIInit must refuse it).  libpmix is opened with dlopen, as libspin
 * does.
 *
 *   pmix_forge VALUE
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <pmix.h>

int main(int argc, char **argv)
{
	pmix_status_t (*init)(pmix_proc_t *, pmix_info_t *, size_t);
	pmix_status_t (*put)(pmix_scope_t, const char *, pmix_value_t *);
	pmix_status_t (*commit)(void);
	pmix_status_t (*fence)(const pmix_proc_t *, size_t, const pmix_info_t *, size_t);
	pmix_status_t (*finalize)(const pmix_info_t *, size_t);
	pmix_value_t v = { .type = PMIX_STRING };
	pmix_info_t fi;
	pmix_proc_t me;
	pmix_status_t rc;
	void *dl;

	if (argc != 2) {
		fprintf(stderr, "usage: pmix_forge VALUE\n");
		return 2;
	}
	dl = dlopen("libpmix.so.2", RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		fprintf(stderr, "pmix_forge: %s\n", dlerror());
		return 1;
	}
	init = (pmix_status_t (*)(pmix_proc_t *, pmix_info_t *, size_t))dlsym(dl, "PMIx_Init");
	put = (pmix_status_t (*)(pmix_scope_t, const char *, pmix_value_t *))dlsym(dl, "PMIx_Put");
	commit = (pmix_status_t (*)(void))dlsym(dl, "PMIx_Commit");
	fence = (pmix_status_t (*)(const pmix_proc_t *, size_t, const pmix_info_t *, size_t))
		dlsym(dl, "PMIx_Fence");
	finalize = (pmix_status_t (*)(const pmix_info_t *, size_t))dlsym(dl, "PMIx_Finalize");
	if (!init || !put || !commit || !fence || !finalize) {
		fprintf(stderr, "pmix_forge: libpmix.so.2 lacks a PMIx call\n");
		return 1;
	}
	if ((rc = init(&me, NULL, 0)) != PMIX_SUCCESS) {
		fprintf(stderr, "pmix_forge: PMIx_Init: %d\n", rc);
		return 1;
	}
	v.data.string = argv[1];
	memset(&fi, 0, sizeof(fi));
	snprintf(fi.key, sizeof(fi.key), "%s", PMIX_COLLECT_DATA);
	fi.value.type = PMIX_BOOL;
	fi.value.data.flag = true;
	if ((rc = put(PMIX_GLOBAL, "spin.ipv4", &v)) != PMIX_SUCCESS || (rc = commit()) != PMIX_SUCCESS ||
	    (rc = fence(NULL, 0, &fi, 1)) != PMIX_SUCCESS) {
		fprintf(stderr, "pmix_forge: put, commit or fence: %d\n", rc);
		finalize(NULL, 0);
		return 1;
	}
	printf("pmix_forge: rank %u published '%s'\n", me.rank, argv[1]);
	finalize(NULL, 0);
	return 0;
}
