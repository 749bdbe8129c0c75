package dev.kvpool.control.stats;

import jakarta.persistence.Entity;
import jakarta.persistence.IdClass;
import jakarta.persistence.Table;

/** An hour bucket: the minute buckets of that hour summed (kept for {@code kvpool.control.stats.hour-retention}). */
@Entity
@Table(name = "stats_hour")
@IdClass(StatsKey.class)
public class StatsHour extends StatsBucket {
}
