package dev.kvpool.control.account;

import com.fasterxml.jackson.annotation.JsonIgnoreProperties;
import dev.kvpool.api.naming.Text;
import dev.kvpool.control.common.ApiException;
import dev.kvpool.control.common.Page;
import jakarta.annotation.security.RolesAllowed;
import jakarta.inject.Inject;
import jakarta.ws.rs.Consumes;
import jakarta.ws.rs.DELETE;
import jakarta.ws.rs.GET;
import jakarta.ws.rs.HeaderParam;
import jakarta.ws.rs.POST;
import jakarta.ws.rs.PUT;
import jakarta.ws.rs.Path;
import jakarta.ws.rs.PathParam;
import jakarta.ws.rs.Produces;
import jakarta.ws.rs.QueryParam;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import java.net.URI;
import java.util.Set;
import org.eclipse.microprofile.openapi.annotations.Operation;
import org.eclipse.microprofile.openapi.annotations.enums.SchemaType;
import org.eclipse.microprofile.openapi.annotations.parameters.Parameter;
import org.eclipse.microprofile.openapi.annotations.media.Schema;
import org.eclipse.microprofile.openapi.annotations.tags.Tag;

@Path("/api/v1/accounts")
@Produces(MediaType.APPLICATION_JSON)
@Consumes(MediaType.APPLICATION_JSON)
@Tag(name = "accounts", description = "Accounts and roles (admin only)")
@RolesAllowed("admin")
public class AccountResource {
    @Inject
    AccountService service;

    @Schema(name = "AccountInput", example = """
            {"name": "team-search", "password": "Correct-Horse-9", "role": "tenant", "groups": ["search"]}""")
    @JsonIgnoreProperties({"version", "createdAt", "updatedAt"}) // read-only: GET, edit, PUT works
    public record AccountInput(String name, String password,
                               @Schema(description = "admin | operator | tenant") String role,
                               @Schema(description = "instance groups of a tenant") Set<String> groups,
                               @Schema(description = "true: no sign-in, earlier tokens refused on every plane")
                               Boolean disabled) {
    }

    @GET
    @Operation(summary = "List accounts", description = "Filter by role; paged. Never returns credentials.")
    public Page<AccountService.AccountView> list(@QueryParam("role") String role,
                                                 @QueryParam("page") @Parameter(schema = @Schema(type = SchemaType.INTEGER)) String page,
                                                 @QueryParam("size") @Parameter(schema = @Schema(type = SchemaType.INTEGER)) String size) {
        if (role != null && !AccountService.ROLES.contains(role.toLowerCase(java.util.Locale.ROOT))) {
            throw ApiException.invalid("role", "role must be one of " + AccountService.ROLES + ", got '"
                    + Text.safe(role) + "'");
        }
        return Page.of(service.list().stream().map(AccountService::view).toList(),
                v -> role == null || role.equalsIgnoreCase(v.role()), page, size, 50);
    }

    @GET
    @Path("{name}")
    @Operation(summary = "Get one account; ETag = version")
    public Response get(@PathParam("name") String name) {
        AccountEntity a = service.get(name);
        return Response.ok(AccountService.view(a)).tag(Long.toString(a.version)).build();
    }

    @POST
    @Operation(summary = "Create an account (password: 12+ characters, 3 character classes)")
    public Response create(AccountInput in) {
        in = in == null ? new AccountInput(null, null, null, null, null) : in;
        AccountEntity a = service.create(in.name(), in.password(), in.role(), in.groups());
        return Response.created(URI.create("/api/v1/accounts/" + a.name)).entity(AccountService.view(a))
                .tag(Long.toString(a.version)).build();
    }

    @PUT
    @Path("{name}")
    @Operation(summary = "Change role, groups, password or disabled (absent fields keep their value); needs If-Match",
            description = "Disabling, or changing role or groups, revokes the account's earlier tokens on every plane.")
    public Response update(@PathParam("name") String name, @HeaderParam("If-Match") String ifMatch, AccountInput in) {
        in = in == null ? new AccountInput(null, null, null, null, null) : in;
        AccountEntity a = service.update(name, in.password(), in.role(), in.groups(), in.disabled(), ifMatch);
        return Response.ok(AccountService.view(a)).tag(Long.toString(a.version)).build();
    }

    @DELETE
    @Path("{name}")
    @Operation(summary = "Delete an account (not the last admin)")
    public Response delete(@PathParam("name") String name, @HeaderParam("If-Match") String ifMatch) {
        service.delete(name, ifMatch);
        return Response.noContent().build();
    }
}
