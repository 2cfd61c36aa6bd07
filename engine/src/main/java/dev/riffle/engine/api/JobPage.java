package dev.riffle.engine.api;

import java.util.List;

/**
 * One page of a job search ({@code RiffleAdmin.searchJobs}), newest job first.
 *
 * @param jobs the jobs found, by descending id; fewer than asked for (even none) does not mean the search is done
 * @param nextBeforeJobId the {@code beforeJobId} of the next page, or 0 when no older job can match
 */
public record JobPage(List<JobInfo> jobs, long nextBeforeJobId) {

    /** Copies {@code jobs}. */
    public JobPage {
        jobs = List.copyOf(jobs);
    }

    /** Whether an older page may hold more matches. */
    public boolean hasMore() {
        return nextBeforeJobId > 0;
    }
}
