package io.vmcuda.appliance.pool;

import java.util.List;

/**
 * A slot promised by a placement: the JSON value of {@code tickets/ID}, under its own lease so that a
 * client that never arrives gives the slot back after cluster.ticket_ttl_s.
 *
 * @param appliance  the appliance the client was sent to
 * @param gpus       the GPUs (UUIDs) chosen for it there
 * @param tenant     the tenant that asked; the ticket serves no other
 */
public record TicketRecord(String appliance, List<String> gpus, String tenant, long createdMs) {}
