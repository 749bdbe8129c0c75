/**
 * KVCM's ReportEvent and GetHostCacheState, implemented here: a KVCM adapter (its per-item result codes are wire
 * ErrorCodes), not a domain package. It answers the kvcm package's {@link dev.kvpool.meta.kvcm.KvcmReports} and maps
 * the domain's refusals through {@link dev.kvpool.meta.kvcm.KvcmCodes}; the kvcm package does not depend on it.
 */
package dev.kvpool.meta.engine.report;
