package io.vmcuda.appliance.cache;

import java.io.IOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.logging.Logger;

/**
 * What leaves the module cache after an admission. A tenant's own code writes its worker's offers, so it can
 * offer as much as it likes; without shares one tenant's flood pushed every other tenant's images out (an attack
 * helper's 70 MiB of random offers emptied a 64 MiB cache). So, when tenants have a share:
 * <ol>
 * <li>a tenant past its share ({@code cache.module_tenant_bytes}) lets go of its own least recently used entries:
 * one only it holds is deleted; one other tenants hold too only loses it as an owner, so they keep it. Each owner
 * counts an entry in full: simple, and a tenant gains nothing by uploading what others hold. Public entries
 * (seeded, or {@code cache.public_sha256}) count against nobody's share and never go in this step;</li>
 * <li>past the cache's budget ({@code cache.module_bytes}) the admitting tenant's own entries go first, then
 * public ones and leftovers no tenant holds, least recently used first; entries other tenants hold go only
 * when the shares together exceed the budget (an operator's setting; the default does not), so that the budget
 * holds whatever the settings.</li>
 * </ol>
 * Without shares, and for the operator's seeding, the least recently used of all go past the budget, as before.
 * Callers serialise (ModuleCache's lock).
 */
final class ModuleEviction {
    private static final Logger LOG = Logger.getLogger(ModuleEviction.class.getName());
    private static final String PAST_BUDGET = ", past cache.module_bytes";

    private final LruEntries lru;
    private final ModuleOwners owners;
    private final Set<String> publicHashes;

    ModuleEviction(LruEntries lru, ModuleOwners owners, Set<String> publicHashes) {
        this.lru = lru;
        this.owners = owners;
        this.publicHashes = publicHashes;
    }

    /** After {@code tenant} admitted (or became an owner of) {@code admitted}, which stays. */
    void after(String admitted, String tenant, long budget, long tenantShare) throws IOException {
        Set<String> keep = Set.of(admitted);
        boolean shares = tenantShare > 0 && !tenant.equals(ModuleOwners.PUBLIC);
        if (shares) withinShare(tenant, tenantShare, keep);
        List<LruEntries.Entry> all = lru.entries();
        long total = LruEntries.total(all);
        if (total <= budget) return;
        if (shares) {
            Map<String, Set<String>> held = owners(all);
            List<LruEntries.Entry> own = all.stream().filter(e -> held.get(e.sha256()).equals(Set.of(tenant))
                    && !isPublic(e, held)).toList();
            total = lru.evict(total, own, budget, keep, " of tenant " + tenant + PAST_BUDGET);
            List<LruEntries.Entry> nobodys = all.stream().filter(e -> isPublic(e, held) || held.get(e.sha256()).isEmpty())
                    .toList();
            total = lru.evict(total, nobodys, budget, keep, PAST_BUDGET);
            if (total <= budget) return;
            LOG.warning("module cache: past cache.module_bytes with none of tenant " + tenant + "'s own or public entries"
                    + " left to remove (the tenants' shares, cache.module_tenant_bytes, together exceed it, or tenants hold"
                    + " more than a share since a reload added tenants): other tenants' least recently used entries go");
            all = lru.entries();
        }
        lru.evict(all, budget, keep, PAST_BUDGET);
    }

    /** Step 1: the tenant's least recently used entries until what it holds is within its share. */
    private void withinShare(String tenant, long share, Set<String> keep) throws IOException {
        List<LruEntries.Entry> all = lru.entries();
        Map<String, Set<String>> held = owners(all);
        List<LruEntries.Entry> mine = all.stream()
                .filter(e -> held.get(e.sha256()).contains(tenant) && !isPublic(e, held)).toList();
        long total = LruEntries.total(mine);
        for (LruEntries.Entry e : mine) {
            if (total <= share) break;
            if (keep.contains(e.sha256())) continue;
            if (held.get(e.sha256()).equals(Set.of(tenant))) {
                lru.delete(e, " of tenant " + tenant + ", past cache.module_tenant_bytes");
            } else {
                owners.remove(e.sha256(), tenant);
                LOG.info("module cache: tenant " + tenant + " no longer holds " + e.sha256() + " (" + e.bytes()
                        + " bytes, least recently used, past cache.module_tenant_bytes); its other owners keep it");
            }
            total -= e.bytes();
        }
    }

    private boolean isPublic(LruEntries.Entry e, Map<String, Set<String>> held) {
        return publicHashes.contains(e.sha256()) || held.get(e.sha256()).contains(ModuleOwners.PUBLIC);
    }

    /** Each entry's owners; an unreadable list (outside damage) counts as nobody's, so the entry may go. */
    private Map<String, Set<String>> owners(List<LruEntries.Entry> entries) {
        Map<String, Set<String>> held = new HashMap<>();
        for (LruEntries.Entry e : entries) {
            try {
                held.put(e.sha256(), owners.of(e.sha256()));
            } catch (IOException ex) {
                LOG.warning("module cache entry " + e.sha256() + ": owners unreadable (" + ex.getMessage() + ")");
                held.put(e.sha256(), Set.of());
            }
        }
        return held;
    }
}
